"""`/runs`, `/runs/{id}` and `/machines`: runs in context a page at a time, a run's verdicts, the machines
with their runs and environments."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection

from tewatch.store.reads.case_reads import FAILING_VERDICTS
from tewatch.store.reads.machine_reads import NO_RUNS, machine_environments, machine_runs, machines
from tewatch.store.reads.release_reads import ReleaseStep, RunRelease, failing_since, step_outlines
from tewatch.store.reads.run_reads import (
    CaseVerdict,
    RunRow,
    result_count,
    run_filters,
    run_row,
    run_rows,
    run_verdicts,
    verdict_counts,
    with_counts,
)
from tewatch.store.reads.table_rows import CaseFacts, EnvironmentFacts, MachineFacts, VerdictFacts
from tewatch_dashboards.status import severity


def runs_page(
    conn: Connection, page: int = 1, per_page: int = 50, gpu: str = "", repo: str = ""
) -> tuple[list[RunRow], int]:
    """Newest first, of one GPU model and one repository where they are given."""
    terms = run_filters(gpu=gpu or None, repo=repo or None)
    found = run_rows(conn, terms, limit=per_page, offset=(page - 1) * per_page)
    return with_counts(conn, found.rows), found.total


def pr_runs(conn: Connection, number: int) -> list[RunRow]:
    """The pull request's runs, newest first."""
    return with_counts(conn, run_rows(conn, run_filters(pr_number=number)).rows)


@dataclass
class RunDetail:
    row: RunRow
    verdicts: list[tuple[CaseFacts, VerdictFacts]]  # every failure, then up to `others_shown` of the rest
    verdict_total: int
    result_count: int
    failing_since: dict[int, RunRelease]  # case id -> where its failure in this run began (branch runs)
    release_step: ReleaseStep | None  # the step from the release before that this run is part of


def _params_key(case: CaseFacts) -> str:
    return json.dumps(case.params, sort_keys=True, default=str)


def run_detail(conn: Connection, run_id: int, others_shown: int = 300) -> RunDetail | None:
    found = run_row(conn, run_id)
    if found is None:
        return None
    failing = run_verdicts(conn, run_id, FAILING_VERDICTS)
    others = run_verdicts(conn, run_id, FAILING_VERDICTS, among=False, limit=others_shown)
    ordered: list[CaseVerdict] = sorted(failing, key=lambda cv: (cv.case.case_name, _params_key(cv.case)))
    ordered += sorted(
        others,
        key=lambda cv: (severity(cv.verdict.status.value, None), cv.case.case_name, _params_key(cv.case)),
    )
    counts = verdict_counts(conn, [found.run]).get(run_id, {})
    since, step = {}, None
    if found.run.pr_number is None and found.run.branch:
        since = failing_since(conn, [cv.case.id for cv in failing], found.run.branch, at_run=run_id)
        steps = step_outlines(conn, found.run.branch)
        step = next((s for s in steps if s.machine_id == found.machine.id and run_id in s.head_run_ids), None)
    return RunDetail(
        RunRow(found.run, found.commit, found.machine, found.environment, counts),
        [(cv.case, cv.verdict) for cv in ordered],
        sum(counts.values()),
        result_count(conn, found.run),
        since,
        step,
    )


@dataclass
class MachineRow:
    machine: MachineFacts
    runs: int
    last_run_id: int | None  # the run that started last (by upload time where a run recorded no start)
    last_run_started: datetime | None  # its start, the time /runs shows; None if it recorded none
    last_run_uploaded: datetime | None
    environments: list[EnvironmentFacts]


def machine_rows(conn: Connection) -> list[MachineRow]:
    """Every machine by GPU model and name, with its runs and the environments they ran in."""
    stats = machine_runs(conn)
    environments = machine_environments(conn)
    out = []
    for m in machines(conn, by_gpu_model=True):
        s = stats.get(m.id, NO_RUNS)
        out.append(
            MachineRow(
                m, s.runs, s.last_run_id, s.last_run_started, s.last_run_uploaded, environments.get(m.id, [])
            )
        )
    return out

"""Runs in their context (commit, machine, environment) as typed rows, for the API's and the pages' runs
lists alike; and what a run holds: its verdicts with their cases, its counts."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Connection, Select, func, select

from tewatch.store.reads.key_lists import in_key_list
from tewatch.store.reads.table_rows import (
    CaseFacts,
    CommitFacts,
    EnvironmentFacts,
    MachineFacts,
    RunFacts,
    VerdictFacts,
    columns,
    row_of,
)
from tewatch.store.schema.models import (
    Case,
    Commit,
    Environment,
    Machine,
    Result,
    Run,
    Verdict,
    VerdictStatus,
)

_PARTS = (RunFacts, CommitFacts, MachineFacts, EnvironmentFacts)  # selected in this order, column by column
_ENDS = [sum(len(columns(part)) for part in _PARTS[: i + 1]) for i in range(len(_PARTS))]


@dataclass(frozen=True)
class RunRow:
    """A run with its commit, machine and environment; `counts` its verdicts by status where read."""

    run: RunFacts
    commit: CommitFacts
    machine: MachineFacts
    environment: EnvironmentFacts
    counts: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class RunRows:
    rows: list[RunRow]
    total: int


def in_run_context(statement: Select) -> Select:
    """`statement` (reading runs, or rows joined to their run) joined to each run's commit, machine and
    environment: what a run is, wherever one is shown."""
    return (
        statement.join(Commit, Commit.id == Run.commit_id)
        .join(Machine, Machine.id == Run.machine_id)
        .join(Environment, Environment.id == Run.environment_id)
    )


def _run_row(values: Sequence[Any]) -> RunRow:
    run, commit, machine, environment = _ENDS
    return RunRow(
        row_of(RunFacts, values[:run]),
        row_of(CommitFacts, values[run:commit]),
        row_of(MachineFacts, values[commit:machine]),
        row_of(EnvironmentFacts, values[machine:environment]),
    )


def _run_rows_select() -> Select:
    return in_run_context(select(*(c for part in _PARTS for c in columns(part))).select_from(Run))


def run_filters(
    *,
    branch: str | None = None,
    gpu: str | None = None,
    machine: str | None = None,
    commit: str | None = None,
    pr_number: int | None = None,
    repo: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
) -> list[ColumnElement[bool]]:
    """WHERE terms on runs in context. `since` (inclusive) and `until` (exclusive) bound when a run
    started (its upload time where asv recorded no start); `commit` is a sha or a prefix of one."""
    started = func.coalesce(Run.started_at, Run.uploaded_at)
    terms: list[ColumnElement[bool]] = []
    if since is not None:
        terms.append(started >= since)
    if until is not None:
        terms.append(started < until)
    if branch is not None:
        terms.append(Run.branch == branch)
    if gpu is not None:
        terms.append(Machine.gpu_model == gpu)
    if machine is not None:
        terms.append(Machine.name == machine)
    if commit is not None:
        terms.append(Commit.sha.startswith(commit))
    if pr_number is not None:
        terms.append(Run.pr_number == pr_number)
    if repo is not None:
        terms.append(Commit.repo == repo)
    return terms


def run_rows(
    conn: Connection, terms: Sequence[ColumnElement[bool]] = (), limit: int | None = None, offset: int = 0
) -> RunRows:
    """Runs matching `terms` (run_filters), newest (highest id) first, `limit` of them from `offset`; and
    how many match."""
    statement = _run_rows_select().where(*terms).order_by(Run.id.desc())
    total = conn.execute(in_run_context(select(func.count()).select_from(Run)).where(*terms)).scalar_one()
    if limit is not None:
        statement = statement.limit(limit)
    if offset:
        statement = statement.offset(offset)
    return RunRows([_run_row(values) for values in conn.execute(statement)], total)


def run_row(conn: Connection, run_id: int) -> RunRow | None:
    found = conn.execute(_run_rows_select().where(Run.id == run_id)).first()
    return _run_row(found) if found is not None else None


def with_counts(conn: Connection, rows: list[RunRow]) -> list[RunRow]:
    """The rows with their verdict counts (verdict_counts)."""
    counts = verdict_counts(conn, [r.run for r in rows])
    return [RunRow(r.run, r.commit, r.machine, r.environment, counts.get(r.run.id, {})) for r in rows]


def newest_run_id(conn: Connection) -> int | None:
    return conn.scalar(select(func.max(Run.id)))


def run_repos(conn: Connection) -> list[str]:
    """The repositories runs are filed under, in name order ("" for runs filed without one)."""
    used = select(Run.commit_id)
    return list(conn.scalars(select(Commit.repo).where(Commit.id.in_(used)).distinct().order_by(Commit.repo)))


def verdict_counts(conn: Connection, runs: Sequence[RunFacts]) -> dict[int, dict[str, int]]:
    """Verdict counts per run: from the summary written at ingest, counted only for runs without one."""
    out: dict[int, dict[str, int]] = {r.id: dict((r.summary or {}).get("verdicts") or {}) for r in runs}
    run_ids = [r.id for r in runs if not out[r.id]]
    if not run_ids:
        return out
    for run_id, status, n in conn.execute(
        select(Verdict.run_id, Verdict.status, func.count())
        .where(Verdict.run_id.in_(run_ids))
        .group_by(Verdict.run_id, Verdict.status)
    ):
        out[run_id][status.value] = n
    return out


def result_count(conn: Connection, run: RunFacts) -> int:
    """How many results the run has: from the summary written at ingest, else counted."""
    return (
        sum(((run.summary or {}).get("results") or {}).values())
        or conn.execute(select(func.count()).select_from(Result).where(Result.run_id == run.id)).scalar()
        or 0
    )


@dataclass(frozen=True)
class CaseVerdict:
    case: CaseFacts
    verdict: VerdictFacts


def run_verdicts(
    conn: Connection,
    run_id: int,
    statuses: Collection[VerdictStatus],
    *,
    among: bool = True,
    limit: int | None = None,
) -> list[CaseVerdict]:
    """The run's verdicts whose status is in `statuses`, with their cases, by case name and case id; or,
    `among` False, those whose status is not, by status, case name and case id."""
    statement = (
        select(*columns(CaseFacts), *columns(VerdictFacts))
        .select_from(Case)
        .join(Verdict, Verdict.case_id == Case.id)
        .where(Verdict.run_id == run_id)
    )
    if among:
        statement = statement.where(Verdict.status.in_(statuses)).order_by(Case.case_name, Case.id)
    else:
        statement = statement.where(Verdict.status.not_in(statuses))
        statement = statement.order_by(Verdict.status, Case.case_name, Case.id)
    if limit is not None:
        statement = statement.limit(limit)
    n_case = len(columns(CaseFacts))
    return [
        CaseVerdict(row_of(CaseFacts, values[:n_case]), row_of(VerdictFacts, values[n_case:]))
        for values in conn.execute(statement)
    ]


def verdicts_in_runs(conn: Connection, run_ids: Sequence[int], case_ids: Sequence[int]) -> list[VerdictFacts]:
    """The verdicts of cases `case_ids` in runs `run_ids`, by run and verdict id."""
    if not run_ids or not case_ids:
        return []
    statement = (
        select(*columns(VerdictFacts))
        .where(Verdict.run_id.in_(run_ids), in_key_list(conn, Verdict.case_id, case_ids, "case_ids"))
        .order_by(Verdict.run_id, Verdict.id)
    )
    return [row_of(VerdictFacts, values) for values in conn.execute(statement)]

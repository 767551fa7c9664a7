"""Write one RunPlan in the caller's transaction: dimensions get-or-create, then the run and its rows."""

from __future__ import annotations

import functools
import operator
from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import Connection, select, update

from tewatch.ingest.commit_graph import place_commit
from tewatch.ingest.fingerprints import series_fingerprint, sha256_hex
from tewatch.ingest.latest import update_latest_verdicts
from tewatch.ingest.pause_point import pause_point
from tewatch.ingest.plan import PlannedKernels, PlannedResult, PlannedTrajectory, PlannedVerdict, RunPlan
from tewatch.ingest.upsert import get_or_create_ids, get_or_create_lazily, insert_ignoring_conflicts
from tewatch.store.schema.models import (
    Benchmark,
    Case,
    CaseKernels,
    Commit,
    Environment,
    Machine,
    RawFile,
    Result,
    Run,
    RunFile,
    Series,
    Trajectory,
    Verdict,
)
from tewatch.store.writes.bulk import insert_rows

RESULT_COLUMNS = ("run_id", "series_id", *PlannedResult._fields[1:])
VERDICT_COLUMNS = ("run_id", "case_id", *PlannedVerdict._fields[1:])
KERNEL_COLUMNS = ("run_id", "case_id", *PlannedKernels._fields[1:])
TRAJECTORY_COLUMNS = ("run_id", "case_id", *PlannedTrajectory._fields[1:])
IN_SERIES_ORDER = operator.itemgetter(RESULT_COLUMNS.index("series_id"))  # sort keys of the rows
IN_CASE_ORDER = operator.itemgetter(VERDICT_COLUMNS.index("case_id"))


@dataclass
class StoredRun:
    run_id: int
    created: bool
    digest: str
    summary: dict


class AlreadyStored(Exception):
    def __init__(self, run_id: int) -> None:
        super().__init__(run_id)
        self.run_id = run_id


def existing_run(conn: Connection, digest: str) -> tuple[int, dict] | None:
    row = conn.execute(select(Run.id, Run.summary).where(Run.digest == digest)).first()
    return (row[0], row[1]) if row else None


def store_plan(conn: Connection, plan: RunPlan) -> StoredRun:
    """Raises AlreadyStored when a concurrent upload of the same content won the race."""
    found = existing_run(conn, plan.digest)
    if found:
        raise AlreadyStored(found[0])
    now = datetime.now(UTC)
    file_digests = _store_raw_files(conn, plan.files, now)
    machine_id = _one_id(conn, Machine.__table__, plan.machine, ("digest",))
    environment_id = _one_id(conn, Environment.__table__, plan.environment, ("digest",))
    commit_id = _store_commit(conn, plan.commit)
    benchmark_ids = _store_benchmarks(conn, plan)
    case_ids = _store_cases(conn, plan)
    series_ids = _store_series(conn, plan, case_ids, benchmark_ids)
    summary = plan.summary()
    run_row = {
        **plan.run,
        "machine_id": machine_id,
        "environment_id": environment_id,
        "commit_id": commit_id,
        "uploaded_at": now,
        "summary": summary,
    }
    statement = insert_ignoring_conflicts(conn, Run.__table__, [run_row], ("digest",)).returning(Run.id)
    run_id = conn.execute(statement, run_row).scalar()
    if run_id is None:  # the insert met a run of the same digest, stored since the check above
        raise AlreadyStored(_stored_run_id(conn, plan.digest))
    pause_point("after-run", run_id)
    # in series (case) order: the rows reach the (series, run) and (case, run) indexes in key order, leaf
    # page after leaf page, instead of at random
    insert_rows(
        conn,
        Result.__table__,
        RESULT_COLUMNS,
        [(run_id, series_ids[r.series_fingerprint], *r[1:]) for r in plan.results],
        order=IN_SERIES_ORDER,
    )
    insert_rows(
        conn,
        Verdict.__table__,
        VERDICT_COLUMNS,
        [(run_id, case_ids[v.case_fingerprint], *v[1:]) for v in plan.verdicts],
        order=IN_CASE_ORDER,
    )
    if plan.kernels:
        insert_rows(
            conn,
            CaseKernels.__table__,
            KERNEL_COLUMNS,
            [(run_id, case_ids[k.case_fingerprint], *k[1:]) for k in plan.kernels],
        )
    if plan.trajectories:
        conn.execute(
            Trajectory.__table__.insert(),
            [
                dict(zip(TRAJECTORY_COLUMNS, (run_id, case_ids[t.case_fingerprint], *t[1:]), strict=True))
                for t in plan.trajectories
            ],
        )
    pause_point("after-results", run_id)
    update_latest_verdicts(conn, run_id, plan.run["branch"])
    conn.execute(
        RunFile.__table__.insert(),
        [{"run_id": run_id, "role": role, "digest": file_digests[role]} for role, _ in plan.files],
    )
    pause_point("before-commit", run_id)
    return StoredRun(run_id, True, plan.digest, summary)


def _store_cases(conn: Connection, plan: RunPlan) -> dict[str, int]:
    """Planned case fingerprint -> case id. A case is found by its (group key, machine): a case stored
    before machines took part keeps the fingerprint it had (migration 0012)."""
    by_identity = get_or_create_lazily(
        conn,
        Case.__table__,
        {(case.group_key, case.machine): case.row for case in plan.cases.values()},
        ("group_key", "machine"),
    )
    return {fp: by_identity[(case.group_key, case.machine)] for fp, case in plan.cases.items()}


def _store_series(
    conn: Connection, plan: RunPlan, case_ids: dict[str, int], benchmark_ids: dict[str, int]
) -> dict[str, int]:
    """Planned series fingerprint -> series id. A series' fingerprint derives from its case's stored one."""
    planned = {fp: case_ids[case_fp] for fp, (case_fp, _) in plan.series.items()}
    stored_fingerprints = _case_fingerprints(conn, set(planned.values()))
    stored: dict[str, tuple[int, str]] = {}  # planned fingerprint -> (case id, stored series fingerprint)
    for fp, (_, benchmark) in plan.series.items():
        case_id = planned[fp]
        stored[fp] = (case_id, series_fingerprint(benchmark, stored_fingerprints[case_id]))

    def series_row(case_id: int, benchmark: str, fingerprint: str) -> dict:
        return {"fingerprint": fingerprint, "case_id": case_id, "benchmark_id": benchmark_ids[benchmark]}

    ids = get_or_create_lazily(
        conn,
        Series.__table__,
        {
            (stored_fp,): functools.partial(series_row, case_id, plan.series[fp][1], stored_fp)
            for fp, (case_id, stored_fp) in stored.items()
        },
        ("fingerprint",),
    )
    return {fp: ids[(stored_fp,)] for fp, (_, stored_fp) in stored.items()}


def _case_fingerprints(conn: Connection, case_ids: set[int]) -> dict[int, str]:
    wanted = sorted(case_ids)
    found: dict[int, str] = {}
    for start in range(0, len(wanted), 500):
        chunk = wanted[start : start + 500]
        rows = conn.execute(select(Case.id, Case.fingerprint).where(Case.id.in_(chunk)))
        found.update((case_id, fingerprint) for case_id, fingerprint in rows)
    return found


def _stored_run_id(conn: Connection, digest: str) -> int:
    found = existing_run(conn, digest)
    if found is None:
        raise RuntimeError(f"no run of digest {digest} after the insert conflicted on it")
    return found[0]


def _one_id(conn: Connection, table, row: dict, keys: tuple[str, ...]) -> int:
    ids = get_or_create_ids(conn, table, [row], keys)
    return ids[tuple(row[k] for k in keys)]


def _store_raw_files(conn: Connection, files: list[tuple[str, bytes]], now: datetime) -> dict[str, str]:
    by_digest: dict[str, bytes] = {}
    roles: dict[str, str] = {}
    for role, content in files:
        digest = sha256_hex(content)
        by_digest[digest] = content
        roles[role] = digest
    wanted = sorted(by_digest)
    existing: set[str] = set()
    for start in range(0, len(wanted), 500):
        chunk = wanted[start : start + 500]
        existing.update(conn.scalars(select(RawFile.digest).where(RawFile.digest.in_(chunk))))
    missing = [
        {"digest": d, "size": len(by_digest[d]), "content": by_digest[d], "created_at": now}
        for d in wanted
        if d not in existing
    ]
    if missing:
        conn.execute(insert_ignoring_conflicts(conn, RawFile.__table__, missing, ("digest",)), missing)
    return roles


def _store_commit(conn: Connection, commit: dict) -> int:
    commit_id = _one_id(conn, Commit.__table__, commit, ("repo", "sha"))
    # A commit first seen without branch/PR context learns it from a later upload that has it.
    fillable = {k: commit[k] for k in ("branch", "pr_number", "merge_base_sha", "committed_at") if commit[k]}
    for column, value in fillable.items():
        conn.execute(
            update(Commit)
            .where(Commit.id == commit_id, getattr(Commit, column).is_(None))
            .values({column: value})
        )
    place_commit(conn, commit_id)
    return commit_id


def _store_benchmarks(conn: Connection, plan: RunPlan) -> dict[str, int]:
    rows = list(plan.benchmarks.values())
    ids = get_or_create_ids(conn, Benchmark.__table__, rows, ("name",))
    current = {
        name: (version, unit)
        for name, version, unit in conn.execute(
            select(Benchmark.name, Benchmark.version, Benchmark.unit).where(
                Benchmark.name.in_(list(plan.benchmarks))
            )
        )
    }
    for row in rows:
        if current.get(row["name"]) != (row["version"], row["unit"]) and row["version"]:
            conn.execute(
                update(Benchmark)
                .where(Benchmark.name == row["name"])
                .values(version=row["version"], unit=row["unit"], param_names=row["param_names"])
            )
    return {name: ids[(name,)] for name in plan.benchmarks}

"""Cases with their latest verdict, for the API's latest verdicts and the pages alike; verdicts with the run
they came from; a case's series and their latest values.

"Latest" means the newest commit (commit order, then run start, then run id) among the runs of one branch
or, with no branch chosen, among the runs that are not a pull request's. A case's latest verdict comes from
the latest-verdict tables ingest keeps (one row per case, and per case and branch); only a case whose newest
verdict is a pull request's walks its (case_id, run_id) index backwards (newest_outside_pull_requests).
Lists of ids travel as one bound parameter (key_lists).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import ColumnElement, Connection, and_, func, select

from tewatch.core.metric_names import HOST_OVERHEAD_SECONDS, KERNEL_SECONDS
from tewatch.core.statuses import FAILING_STATUSES
from tewatch.store.engine.gc_pause import collector_paused
from tewatch.store.reads.commit_order import newest_commit_first
from tewatch.store.reads.key_lists import in_key_list
from tewatch.store.reads.table_rows import CaseFacts, columns, row_of
from tewatch.store.schema.models import (
    Benchmark,
    Case,
    Commit,
    Environment,
    LatestBranchVerdict,
    LatestVerdict,
    Result,
    Run,
    Series,
    Verdict,
    VerdictStatus,
)

FAILING_VERDICTS = tuple(VerdictStatus(s) for s in sorted(FAILING_STATUSES))


def branch_clause(branch: str | None) -> ColumnElement[bool]:
    """The runs of `branch`; with none, every run that is not a pull request's."""
    return Run.branch == branch if branch else Run.pr_number.is_(None)


@dataclass(frozen=True)
class CaseSelection:
    """Which cases: every one, or those of one GPU model, recipe, backend, world size, name or id."""

    gpu: str | None = None
    recipe: str | None = None
    backend: str | None = None
    world_size: int | None = None
    case_name: str | None = None
    case_id: int | None = None

    def clauses(self) -> list[ColumnElement[bool]]:
        wanted = (
            (Case.gpu_model, self.gpu),
            (Case.recipe, self.recipe),
            (Case.backend, self.backend),
            (Case.world_size, self.world_size),
            (Case.case_name, self.case_name),
            (Case.id, self.case_id),
        )
        return [column == value for column, value in wanted if value is not None]


@dataclass(frozen=True)
class VerdictBrief:
    id: int
    status: VerdictStatus
    check: str
    exception_class: str | None
    message: str | None
    reason: str | None


@dataclass(frozen=True)
class CaseHead:
    """A case and its latest verdict in brief (None: no verdict under the branch filter)."""

    case: CaseFacts
    verdict: VerdictBrief | None


_BRIEF = (Verdict.id, Verdict.status, Verdict.check, Verdict.exception_class, Verdict.message, Verdict.reason)


def _brief(values: Sequence) -> VerdictBrief | None:
    return VerdictBrief(*values) if values[0] is not None else None


def latest_case_verdicts(
    conn: Connection, selection: CaseSelection, branch: str | None = None, by_name: bool = False
) -> list[CaseHead]:
    """Every selected case with its latest verdict in brief, by id (`by_name`: by name, then id): one
    statement on the latest-verdict tables, then, with no branch chosen, the few cases whose newest verdict
    is a pull request's get their newest other verdict."""
    case_columns = columns(CaseFacts)
    n_case = len(case_columns)
    order = (Case.case_name, Case.id) if by_name else (Case.id,)
    if branch:
        statement = (
            select(*case_columns, *_BRIEF)
            .outerjoin(
                LatestBranchVerdict,
                and_(LatestBranchVerdict.case_id == Case.id, LatestBranchVerdict.branch == branch),
            )
            .outerjoin(Verdict, Verdict.id == LatestBranchVerdict.verdict_id)
            .where(*selection.clauses())
            .order_by(*order)
        )
        with collector_paused():
            return [
                CaseHead(row_of(CaseFacts, row[:n_case]), _brief(row[n_case:]))
                for row in conn.execute(statement)
            ]
    statement = (
        select(*case_columns, *_BRIEF, Run.pr_number)
        .outerjoin(LatestVerdict, LatestVerdict.case_id == Case.id)
        .outerjoin(Run, Run.id == LatestVerdict.run_id)
        .outerjoin(Verdict, Verdict.id == LatestVerdict.verdict_id)
        .where(*selection.clauses())
        .order_by(*order)
    )
    heads: list[CaseHead] = []
    from_pull_requests: dict[int, int] = {}  # case id -> its place in heads
    with collector_paused():
        for row in conn.execute(statement):
            heads.append(CaseHead(row_of(CaseFacts, row[:n_case]), _brief(row[n_case:-1])))
            if row[-1] is not None:
                from_pull_requests[heads[-1].case.id] = len(heads) - 1
    if from_pull_requests:
        newest = newest_outside_pull_requests(conn, list(from_pull_requests))
        found = {
            row[0]: _brief(row[1:])
            for row in conn.execute(
                select(Verdict.case_id, *_BRIEF).where(
                    in_key_list(conn, Verdict.id, list(newest.values()), "verdict_ids")
                )
            )
        }
        for case_id, place in from_pull_requests.items():
            heads[place] = CaseHead(heads[place].case, found.get(case_id))
    return heads


def newest_outside_pull_requests(conn: Connection, case_ids: Sequence[int]) -> dict[int, int]:
    """Case id -> the id of its newest verdict from a run that is not a pull request's (cases with none
    are left out)."""
    if not case_ids:
        return {}
    newest = (
        select(Verdict.id)
        .join(Run, Run.id == Verdict.run_id)
        .join(Commit, Commit.id == Run.commit_id)
        .where(Verdict.case_id == Case.id, Run.pr_number.is_(None))
        .order_by(*newest_commit_first(Verdict.run_id))
        .limit(1)
        .correlate(Case)
        .scalar_subquery()
    )
    rows = conn.execute(select(Case.id, newest).where(in_key_list(conn, Case.id, list(case_ids), "case_ids")))
    return {case_id: verdict_id for case_id, verdict_id in rows if verdict_id is not None}


@dataclass(frozen=True)
class VerdictRow:
    """A verdict in full with the run it came from."""

    id: int
    case_id: int
    status: str
    check: str
    exception_class: str | None
    message: str | None
    traceback_head: str | None
    reason: str | None
    metric: str | None
    metric_value: float | None
    tolerance: float | None
    extra_checks: list
    gpu_state: dict
    run_id: int
    commit_sha: str
    branch: str | None
    pr_number: int | None
    started_at: datetime | None
    uploaded_at: datetime
    te_version: str  # of its run, "" where it recorded none

    @property
    def at(self) -> datetime | None:
        """When its run ran: its start, else its upload."""
        return self.started_at or self.uploaded_at


_VERDICT_ROW = (
    select(
        Verdict.id,
        Verdict.case_id,
        Verdict.status,
        Verdict.check,
        Verdict.exception_class,
        Verdict.message,
        Verdict.traceback_head,
        Verdict.reason,
        Verdict.metric,
        Verdict.metric_value,
        Verdict.tolerance,
        Verdict.extra_checks,
        Verdict.gpu_state,
        Verdict.run_id,
        Commit.sha,
        Run.branch,
        Run.pr_number,
        Run.started_at,
        Run.uploaded_at,
        Environment.te_version,
    )
    .select_from(Verdict)
    .join(Run, Run.id == Verdict.run_id)
    .join(Commit, Commit.id == Run.commit_id)
    .join(Environment, Environment.id == Run.environment_id)
)


def _verdict_row(values: Sequence) -> VerdictRow:
    vid, case_id, status, check, exc, message, tb, reason, metric, value, tol, extra, gpu = values[:13]
    run_id, sha, branch, pr_number, started_at, uploaded_at, version = values[13:]
    return VerdictRow(
        vid,
        case_id,
        status.value,
        check,
        exc,
        message,
        tb,
        reason,
        metric,
        value,
        tol,
        extra or [],
        gpu or {},
        run_id,
        sha,
        branch,
        pr_number,
        started_at,
        uploaded_at,
        version or "",
    )


def verdict_rows(conn: Connection, verdict_ids: Sequence[int]) -> dict[int, VerdictRow]:
    """Verdict id -> the verdict in full."""
    if not verdict_ids:
        return {}
    found = conn.execute(_VERDICT_ROW.where(in_key_list(conn, Verdict.id, list(verdict_ids), "verdict_ids")))
    return {row.id: row for row in map(_verdict_row, found)}


def case_verdicts(
    conn: Connection,
    case_id: int,
    *,
    limit: int,
    statuses: Sequence[VerdictStatus] | None = None,
    branch: str | None = None,
    every_run: bool = True,
) -> list[VerdictRow]:
    """The case's newest (highest run id) `limit` verdicts: of every run, or (`every_run` False) of those
    under the branch filter (branch_clause); of any status or of `statuses`. The runs are chosen on the
    (case, run, status) index alone: a case that rarely fails would otherwise have every verdict row read
    to find none."""
    chosen = select(Verdict.run_id).where(Verdict.case_id == case_id)
    if statuses is not None:
        chosen = chosen.where(Verdict.status.in_(statuses))
    if not every_run:
        chosen = chosen.join(Run, Run.id == Verdict.run_id).where(branch_clause(branch))
    run_ids = list(conn.scalars(chosen.order_by(Verdict.run_id.desc()).limit(limit)))
    if not run_ids:
        return []
    statement = _VERDICT_ROW.where(Verdict.case_id == case_id, Verdict.run_id.in_(run_ids))
    return [_verdict_row(v) for v in conn.execute(statement.order_by(Verdict.run_id.desc()))]


SECONDARY_TIMES = {KERNEL_SECONDS: 0.5, HOST_OVERHEAD_SECONDS: 2.0}  # case-record metrics in seconds


def primary_rank(benchmark_name: str, unit: str) -> float:
    """The call's own (event) time first, then its kernel time, other units, the host's share and
    compile time last."""
    method = benchmark_name.rsplit(".", 1)[-1]
    if unit == "seconds" and method in SECONDARY_TIMES:
        return SECONDARY_TIMES[method]
    if unit == "seconds" and "compile" not in method:
        return 0.0
    if unit == "seconds":
        return 2.0
    return 1.0


@dataclass(frozen=True)
class PrimarySeries:
    series_id: int
    unit: str


def primary_series(conn: Connection, case_ids: Sequence[int]) -> dict[int, PrimarySeries]:
    """Case id -> the series it is judged by: its timing in seconds, not its compile time or derived
    metrics (primary_rank; of the best rank, the first by name, as case_series lists them)."""
    if not case_ids:
        return {}
    rows = conn.execute(
        select(Series.case_id, Series.id, Benchmark.name, Benchmark.unit)
        .join(Benchmark, Benchmark.id == Series.benchmark_id)
        .where(in_key_list(conn, Series.case_id, list(case_ids), "case_ids"))
        .order_by(Benchmark.name, Series.id)
    ).all()
    best: dict[int, tuple[float, PrimarySeries]] = {}
    for case_id, series_id, name, unit in rows:
        rank = primary_rank(name, unit)
        if case_id not in best or rank < best[case_id][0]:
            best[case_id] = (rank, PrimarySeries(series_id, unit))
    return {case_id: primary for case_id, (_rank, primary) in best.items()}


def latest_values(conn: Connection, series_ids: Sequence[int], branch: str | None) -> dict[int, float | None]:
    """Series id -> its latest value under the branch filter (branch_clause)."""
    if not series_ids:
        return {}
    latest = (
        select(Result.value)
        .join(Run, Run.id == Result.run_id)
        .join(Commit, Commit.id == Run.commit_id)
        .where(Result.series_id == Series.id, branch_clause(branch))
        .order_by(*newest_commit_first(Result.run_id))
        .limit(1)
        .correlate(Series)
        .scalar_subquery()
    )
    return dict(
        conn.execute(
            select(Series.id, latest).where(in_key_list(conn, Series.id, list(series_ids), "series_ids"))
        ).all()
    )


def latest_metric(
    conn: Connection, case_ids: Sequence[int], metric: str, branch: str | None
) -> dict[int, float | None]:
    """Case id -> the latest value of its record metric `metric` (a series `<case>.<metric>`)."""
    if not case_ids:
        return {}
    found = conn.execute(
        select(Series.case_id, Series.id)
        .join(Benchmark, Benchmark.id == Series.benchmark_id)
        .where(
            in_key_list(conn, Series.case_id, list(case_ids), "metric_case_ids"),
            Benchmark.name.endswith(f".{metric}"),
        )
    ).all()
    values = latest_values(conn, [series_id for _, series_id in found], branch)
    return {case_id: values.get(series_id) for case_id, series_id in found}


def has_case_of_backend(conn: Connection, backends: Sequence[str]) -> bool:
    return conn.scalar(select(Case.id).where(Case.backend.in_(backends)).limit(1)) is not None


def case_placements(conn: Connection) -> list[tuple[str | None, int | None, dict]]:
    """(mode, rank, labels) of every case with a mode or a backend: what places a case in a grid."""
    found = conn.execute(
        select(Case.mode, Case.rank, Case.labels).where(Case.mode.is_not(None) | Case.backend.is_not(None))
    )
    return [(mode, rank, labels or {}) for mode, rank, labels in found]


def case_facts(conn: Connection, case_id: int) -> CaseFacts | None:
    found = conn.execute(select(*columns(CaseFacts)).where(Case.id == case_id)).first()
    return row_of(CaseFacts, found) if found is not None else None


@dataclass(frozen=True)
class SeriesSummary:
    series_id: int
    benchmark: str
    unit: str
    latest_value: float | None
    points: int


def case_series(conn: Connection, case_id: int, branch: str | None) -> list[SeriesSummary]:
    """The case's series with their latest value (under the branch filter) and number of results,
    primary first (primary_rank), then by benchmark name."""
    series_rows = conn.execute(
        select(Series.id, Benchmark.name, Benchmark.unit)
        .join(Benchmark, Benchmark.id == Series.benchmark_id)
        .where(Series.case_id == case_id)
        .order_by(Benchmark.name)
    ).all()
    sids = [s.id for s in series_rows]
    values = latest_values(conn, sids, branch)
    counts = (
        dict(
            conn.execute(
                select(Result.series_id, func.count())
                .where(Result.series_id.in_(sids))
                .group_by(Result.series_id)
            ).all()
        )
        if sids
        else {}
    )
    return [
        SeriesSummary(s.id, s.name, s.unit, values.get(s.id), counts.get(s.id, 0))
        for s in sorted(series_rows, key=lambda s: (primary_rank(s.name, s.unit), s.name))
    ]

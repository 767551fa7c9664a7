"""The dashboard's read queries. Every page reads the store through this module, never through raw SQL.

"Latest" means the newest commit (commit date, then run start, then run id) among the runs that match the
branch filter; with no branch chosen, every run that is not a pull-request run. A case's latest verdict comes from the latest-verdict tables ingest keeps
(one row per case, and per case and branch); only a case whose newest verdict is a pull request's falls back
to walking its (case_id, run_id) index backwards. Per-series look-ups walk the (series_id, run_id) index the
same way, so they stay cheap on a long history. Lists of ids travel as one bound parameter (key_lists).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cached_property
from typing import Any

from sqlalchemy import ColumnElement, Connection, String, and_, func, select, type_coerce
from sqlalchemy.orm import QueryableAttribute, Session

from tewatch.core.statuses import FAILING_STATUSES
from tewatch.pipeline.detection import FAILING as REPORT_FAILING
from tewatch.pipeline.detection import FixedCase, fixed_cases, is_new_failure, previous_verdicts
from tewatch.store.alert_models import Alert, AlertStatusChange, Detection, PrComparison
from tewatch.store.case_reads import newest_outside_pull_requests
from tewatch.store.commit_order import NO_DATE, newest_commit_first
from tewatch.store.gc_pause import collector_paused
from tewatch.store.key_lists import in_key_list
from tewatch.store.models import (
    Benchmark,
    Case,
    Commit,
    Environment,
    LatestBranchVerdict,
    LatestVerdict,
    Machine,
    Result,
    Run,
    Series,
    Verdict,
)
from tewatch.store.queries import in_run_context
from tewatch_dashboards import detection
from tewatch_dashboards.status import Severity, severity

MATRIX_MODES = ("eager", "default", "reduce-overhead", "max-autotune")
MATRIX_RANKS = (2, 3, 4)
# Checks shown beside the compile modes: per input rank (the fake-vs-real shape contract of quantized
# tensors, which predicts the 3D/4D compile failures) and per recipe (CPU round trip, checkpoint parity).
RANK_CHECK_OPS = ("shape_contract",)
ROW_CHECK_OPS = (
    "cpu_round_trip",
    "checkpoint",
    "cpu_ops",
    "determinism",
    "nd_update",
    "dcp_round_trip",
    "fsdp_dcp_round_trip",
)
# Params that place a case in the grid; whatever else a case has (a shape, say) splits rows.
MATRIX_AXES = frozenset({"recipe", "rank", "mode", "backend", "quantizer", "variant", "world_size"})


@dataclass(frozen=True)
class Filters:
    gpu: str = ""
    recipe: str = ""
    backend: str = ""
    branch: str = ""
    q: str = ""
    world_size: int | None = None

    def case_clauses(self) -> list[ColumnElement[bool]]:
        clauses: list[ColumnElement[bool]] = []
        if self.gpu:
            clauses.append(Case.gpu_model == self.gpu)
        if self.recipe:
            clauses.append(Case.recipe == self.recipe)
        if self.backend:
            clauses.append(Case.backend == self.backend)
        if self.world_size is not None:
            clauses.append(Case.world_size == self.world_size)
        return clauses


def branch_clause(branch: str) -> ColumnElement[bool]:
    return Run.branch == branch if branch else Run.pr_number.is_(None)


@dataclass(frozen=True)
class FilterOptions:
    gpus: list[str]
    recipes: list[str]
    backends: list[str]
    branches: list[str]
    world_sizes: list[int]


def filter_options(session: Session) -> FilterOptions:
    def distinct(column) -> list:
        return [v for v in session.scalars(select(column).distinct().order_by(column)) if v not in (None, "")]

    return FilterOptions(
        gpus=distinct(Case.gpu_model),
        recipes=distinct(Case.recipe),
        backends=distinct(Case.backend),
        branches=[
            b
            for b in session.scalars(
                select(Run.branch).where(Run.pr_number.is_(None)).distinct().order_by(Run.branch)
            )
            if b
        ],
        world_sizes=distinct(Case.world_size),
    )


def store_state(session: Session) -> tuple:
    """Changes whenever what the case-wide pages show may have changed: an upload (cases, series, verdicts
    and results arrive only with a run), an alert opening or changing status (each adds a status change),
    detection recording or withdrawing a change point. Read it before the data it stands for."""
    return tuple(
        session.execute(
            select(
                select(func.max(Run.id)).scalar_subquery(),
                select(func.max(Alert.id)).scalar_subquery(),
                select(func.max(AlertStatusChange.id)).scalar_subquery(),
                select(func.max(Detection.id)).scalar_subquery(),
                select(func.max(Detection.updated_at)).scalar_subquery(),
            )
        ).one()
    )


# ---------------------------------------------------------------------------------------------- cases


@dataclass
class VerdictView:
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
    at: datetime | None


@dataclass
class CaseRow:
    case_id: int
    case_name: str
    params: dict
    gpu_model: str
    backend: str | None
    recipe: str | None
    mode: str | None
    rank: int | None
    world_size: int | None
    labels: dict = field(default_factory=dict)
    # the latest verdict in brief (every case) and in full (only the cases a page shows; see fill_details)
    verdict_id: int | None = None
    verdict_status: str | None = None
    verdict_check: str = ""
    exception_class: str | None = None
    message: str | None = None
    reason: str | None = None
    verdict: VerdictView | None = None
    perf_signal: str | None = None
    perf_effect: float | None = None
    primary_series_id: int | None = None
    primary_unit: str = "seconds"
    latest_value: float | None = None

    @cached_property
    def suite(self) -> str:
        return self.case_name.split(".", 1)[0]

    @property
    def status(self) -> str | None:
        return self.verdict_status

    @property
    def severity(self) -> Severity:
        return severity(self.status, self.perf_signal)

    @cached_property
    def params_label(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in sorted(self.params.items()))

    def matches(self, needle: str) -> bool:
        haystack = [
            self.case_name,
            self.params_label,
            self.gpu_model,
            self.status or "",
            self.verdict_check,
            self.exception_class or "",
            self.message or "",
        ]
        return needle in " ".join(haystack).lower()


def key_list(
    session: Session, column: ColumnElement[Any] | QueryableAttribute[Any], ids: Sequence[int], name: str
) -> ColumnElement[bool]:
    """`column IN ids` as one bound parameter: thousands of ids cost no SQL to render or plan."""
    return in_key_list(session.connection(), column, ids, name)


def _verdict_views(session: Session, verdict_ids: list[int]) -> dict[int, VerdictView]:
    if not verdict_ids:
        return {}
    rows = session.execute(
        select(Verdict, Run.branch, Run.pr_number, Run.started_at, Run.uploaded_at, Commit.sha)
        .join(Run, Run.id == Verdict.run_id)
        .join(Commit, Commit.id == Run.commit_id)
        .where(key_list(session, Verdict.id, verdict_ids, "verdict_ids"))
    ).all()
    return {
        v.id: _verdict_view(v, branch, pr, started or uploaded, sha)
        for v, branch, pr, started, uploaded, sha in rows
    }


def _verdict_view(v: Verdict, branch, pr, at, sha) -> VerdictView:
    return VerdictView(
        status=v.status.value,
        check=v.check,
        exception_class=v.exception_class,
        message=v.message,
        traceback_head=v.traceback_head,
        reason=v.reason,
        metric=v.metric,
        metric_value=v.metric_value,
        tolerance=v.tolerance,
        extra_checks=v.extra_checks or [],
        gpu_state=v.gpu_state or {},
        run_id=v.run_id,
        commit_sha=sha,
        branch=branch,
        pr_number=pr,
        at=at,
    )


def _primary_series(session: Session, case_ids: list[int]) -> dict[int, tuple[int, str]]:
    """The series a case is judged by: its timing in seconds, not its compile time or derived metrics."""
    if not case_ids:
        return {}
    rows = session.execute(
        select(Series.case_id, Series.id, Benchmark.name, Benchmark.unit)
        .join(Benchmark, Benchmark.id == Series.benchmark_id)
        .where(key_list(session, Series.case_id, case_ids, "case_ids"))
        .order_by(Series.id)
    ).all()
    best: dict[int, tuple[float, int, str]] = {}
    for case_id, series_id, name, unit in rows:
        rank = primary_rank(name, unit)
        if case_id not in best or rank < best[case_id][0]:
            best[case_id] = (rank, series_id, unit)
    return {case_id: (sid, unit) for case_id, (_rank, sid, unit) in best.items()}


SECONDARY_TIMES = {"kernel_seconds": 0.5, "host_overhead_seconds": 2.0}  # case-record metrics in seconds


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


def _latest_values(session: Session, series_ids: list[int], branch: str) -> dict[int, float | None]:
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
        session.execute(
            select(Series.id, latest).where(key_list(session, Series.id, series_ids, "series_ids"))
        ).all()
    )


_CASE_COLUMNS = (
    Case.id,
    Case.case_name,
    Case.params,
    Case.gpu_model,
    Case.backend,
    Case.recipe,
    Case.mode,
    Case.rank,
    Case.world_size,
    Case.labels,
)
_VERDICT_BRIEF = (
    Verdict.id,
    Verdict.status,
    Verdict.check,
    Verdict.exception_class,
    Verdict.message,
    Verdict.reason,
)


def _case_row(case: Sequence, verdict: Sequence) -> CaseRow:
    cid, name, params, gpu, backend, recipe, mode, rank, ws, labels = case
    vid, status, check, exc, message, reason = verdict
    return CaseRow(
        case_id=cid,
        case_name=name,
        params=params or {},
        gpu_model=gpu,
        backend=backend,
        recipe=recipe,
        mode=mode,
        rank=rank,
        world_size=ws,
        labels=labels or {},
        verdict_id=vid,
        verdict_status=status.value if status is not None else None,
        verdict_check=check or "",
        exception_class=exc,
        message=message,
        reason=reason,
    )


def latest_cases(
    session: Session, filters: Filters, extra: ColumnElement[bool] | None = None
) -> list[CaseRow]:
    """Every case matching the filters (search aside) with its latest verdict in brief, in one statement on
    the latest-verdict tables; then, with no branch chosen, the few cases whose newest verdict is a pull
    request's get their newest non-PR verdict by walking their own history."""
    where = [*filters.case_clauses(), *([extra] if extra is not None else [])]
    n_case = len(_CASE_COLUMNS)
    if filters.branch:
        stmt = (
            select(*_CASE_COLUMNS, *_VERDICT_BRIEF)
            .outerjoin(
                LatestBranchVerdict,
                and_(LatestBranchVerdict.case_id == Case.id, LatestBranchVerdict.branch == filters.branch),
            )
            .outerjoin(Verdict, Verdict.id == LatestBranchVerdict.verdict_id)
            .where(*where)
        )
        with collector_paused():
            return [_case_row(row[:n_case], row[n_case:]) for row in session.execute(stmt)]
    stmt = (
        select(*_CASE_COLUMNS, *_VERDICT_BRIEF, Run.pr_number)
        .outerjoin(LatestVerdict, LatestVerdict.case_id == Case.id)
        .outerjoin(Run, Run.id == LatestVerdict.run_id)
        .outerjoin(Verdict, Verdict.id == LatestVerdict.verdict_id)
        .where(*where)
    )
    rows, from_pull_requests = [], []
    with collector_paused():
        for row in session.execute(stmt):
            rows.append(_case_row(row[:n_case], row[n_case:-1]))
            if row[-1] is not None:
                from_pull_requests.append(rows[-1])
    if from_pull_requests:
        _replace_pull_request_verdicts(session, from_pull_requests)
    return rows


def _replace_pull_request_verdicts(session: Session, rows: list[CaseRow]) -> None:
    """Give rows whose newest verdict came from a pull request their newest verdict from any other run."""
    newest = newest_outside_pull_requests(session.connection(), [r.case_id for r in rows])
    found = {
        row[0]: row[1:]
        for row in session.execute(
            select(Verdict.case_id, *_VERDICT_BRIEF).where(
                key_list(session, Verdict.id, list(newest.values()), "verdict_ids")
            )
        )
    }
    empty = (None,) * len(_VERDICT_BRIEF)
    for r in rows:
        vid, status, check, exc, message, reason = found.get(r.case_id, empty)
        r.verdict_id, r.verdict_status, r.verdict_check = vid, status.value if status else None, check or ""
        r.exception_class, r.message, r.reason = exc, message, reason


def add_perf_signals(session: Session, rows: list[CaseRow]) -> None:
    signals = perf_signals(session, [r.case_id for r in rows])
    for r in rows:
        signal = signals.get(r.case_id)
        if signal:
            r.perf_signal, r.perf_effect = signal.kind, signal.effect


def case_heads(session: Session, filters: Filters, extra: ColumnElement[bool] | None = None) -> list[CaseRow]:
    """Every case matching the filters with its latest verdict in brief and its perf signal, so pages can
    sort and count thousands of cases and fill in only what they show."""
    rows = latest_cases(session, filters, extra)
    if filters.q:
        needle = filters.q.lower()
        rows = [r for r in rows if r.matches(needle)]
    add_perf_signals(session, rows)
    return rows


def fill_details(session: Session, rows: list[CaseRow], branch: str) -> None:
    """The full latest verdict, the primary series and its latest value, for the rows a page shows."""
    verdicts = _verdict_views(session, [r.verdict_id for r in rows if r.verdict_id is not None])
    for r in rows:
        r.verdict = verdicts.get(r.verdict_id) if r.verdict_id is not None else None
    fill_values(session, rows, branch)


OVER_EAGER = "over_eager"  # the record metric of a compiled case's time over eager's, in one process


def _latest_metric(
    session: Session, case_ids: list[int], metric: str, branch: str
) -> dict[int, float | None]:
    """Case id -> the latest value of its record metric `metric` (a series `<case>.<metric>`)."""
    if not case_ids:
        return {}
    found = session.execute(
        select(Series.case_id, Series.id)
        .join(Benchmark, Benchmark.id == Series.benchmark_id)
        .where(
            key_list(session, Series.case_id, case_ids, "metric_case_ids"),
            Benchmark.name.endswith(f".{metric}"),
        )
    ).all()
    values = _latest_values(session, [series_id for _, series_id in found], branch)
    return {case_id: values.get(series_id) for case_id, series_id in found}


def fill_values(session: Session, rows: list[CaseRow], branch: str) -> None:
    """The primary series of each row and its latest value."""
    primaries = _primary_series(session, [r.case_id for r in rows])
    values = _latest_values(session, [sid for sid, _unit in primaries.values()], branch)
    for r in rows:
        sid, unit = primaries.get(r.case_id, (None, "seconds"))
        r.primary_series_id, r.primary_unit = sid, unit
        r.latest_value = values.get(sid) if sid else None


def case_rows(session: Session, filters: Filters, extra: ColumnElement[bool] | None = None) -> list[CaseRow]:
    """Every case matching the filters, in full."""
    rows = case_heads(session, filters, extra)
    fill_details(session, rows, filters.branch)
    return rows


@dataclass
class SuiteSummary:
    suite: str
    gpu_model: str
    counts: dict[Severity, int] = field(default_factory=lambda: defaultdict(int))

    @property
    def total(self) -> int:
        return sum(self.counts.values())


@dataclass
class Overview:
    rows: list[CaseRow]  # every case that matches, worst first
    summaries: list[SuiteSummary]
    gpus: list[str]
    page: int = 1  # the page shown, 1-based
    pages: int = 1
    start: int = 0  # rows[start:end] are the page's, filled in full
    end: int = 0
    group_sizes: dict[Severity, int] = field(default_factory=dict)  # cases per severity, over every page

    @property
    def shown(self) -> list[CaseRow]:
        return self.rows[self.start : self.end]


def page_bounds(rows: Sequence[CaseRow], per_page: int) -> list[tuple[int, int]]:
    """(start, end) of each page of `rows` (worst first): the first holds every correctness failure and
    performance regression however many there are, and fills up to `per_page` with what follows; the
    others hold `per_page` each. Always one page at least."""
    first = min(len(rows), max(per_page, sum(1 for r in rows if r.severity <= Severity.regression)))
    bounds = [(0, first)]
    for start in range(first, len(rows), per_page):
        bounds.append((start, min(start + per_page, len(rows))))
    return bounds


def overview(session: Session, filters: Filters, page: int = 1, per_page: int | None = None) -> Overview:
    """Every case sorted worst first, counted per suite and GPU; the rows of page `page` of `per_page`
    (page_bounds: every failure and regression on the first) in full, or every row with no `per_page`.
    A page past the last shows no rows."""
    rows = case_heads(session, filters)
    rows.sort(key=lambda r: (r.severity, r.suite, r.case_name, r.gpu_model, r.params_label))
    bounds = page_bounds(rows, per_page) if per_page else [(0, len(rows))]
    start, end = bounds[page - 1] if page <= len(bounds) else (len(rows), len(rows))
    fill_details(session, rows[start:end], filters.branch)
    group_sizes: dict[Severity, int] = defaultdict(int)
    for r in rows:
        group_sizes[r.severity] += 1
    summaries: dict[tuple[str, str], SuiteSummary] = {}
    for r in rows:
        summary = summaries.get((r.suite, r.gpu_model))
        if summary is None:
            summary = summaries[(r.suite, r.gpu_model)] = SuiteSummary(r.suite, r.gpu_model)
        summary.counts[r.severity] += 1
    return Overview(
        rows=rows,
        summaries=sorted(summaries.values(), key=lambda s: (s.suite, s.gpu_model)),
        gpus=sorted({r.gpu_model for r in rows}),
        page=page,
        pages=len(bounds),
        start=start,
        end=end,
        group_sizes=dict(group_sizes),
    )


# --------------------------------------------------------------------------------------- perf signals


def perf_signals(session: Session, case_ids: list[int]) -> dict[int, detection.PerfSignal]:
    return detection.perf_signals(session, case_ids)


# ---------------------------------------------------------------------------------------------- matrix


@dataclass
class MatrixCell:
    row: CaseRow
    # compiled time / eager time of the same recipe and rank: measured in the compiled case's process where
    # it says so (`over_eager`), else the latest of each case
    ratio: float | None = None
    variants: list[str] = field(default_factory=list)  # e.g. nvfp4, nvfp4-rht, nvfp4-2d in one contract cell


@dataclass
class MatrixRow:
    backend: str | None
    recipe: str | None
    other: str  # the params outside the grid axes, e.g. "shape=4096x4096"
    cells: dict[tuple[int, str], MatrixCell] = field(default_factory=dict)  # (rank or 0, mode or op)


@dataclass
class Matrix:
    gpu_model: str
    world_size: int | None
    case_names: list[str]
    rows: list[MatrixRow]
    rank_checks: list[str]  # RANK_CHECK_OPS present in this grid
    row_checks: list[str]  # ROW_CHECK_OPS present in this grid


def matrix_column(mode: str | None, rank: int | None, labels: dict) -> tuple[int, str] | None:
    """Where a case sits in the grid, or None when it does not belong there."""
    op = str(labels.get("op", ""))
    if mode in MATRIX_MODES and rank in MATRIX_RANKS:
        return rank, mode
    if mode is None and op in RANK_CHECK_OPS and rank in MATRIX_RANKS:
        return rank, op
    if mode is None and rank is None and op in ROW_CHECK_OPS:
        return 0, op
    return None


def matrix(session: Session, filters: Filters) -> list[Matrix]:
    placed: dict[int, tuple[int, str]] = {}
    rows = []
    for r in latest_cases(session, filters):
        if (column := matrix_column(r.mode, r.rank, r.labels)) is not None:
            placed[r.case_id] = column
            rows.append(r)
    add_perf_signals(session, rows)
    fill_values(session, rows, filters.branch)
    grids: dict[tuple[str, int | None], dict[tuple, MatrixRow]] = defaultdict(dict)
    names: dict[tuple[str, int | None], set[str]] = defaultdict(set)
    for r in rows:
        column = placed[r.case_id]
        other = ", ".join(f"{k}={v}" for k, v in sorted(r.params.items()) if k not in MATRIX_AXES)
        grid_key = (r.gpu_model, r.world_size)
        names[grid_key].add(r.case_name)
        mrow = grids[grid_key].setdefault(
            (r.backend or "", r.recipe or "", other), MatrixRow(r.backend, r.recipe, other)
        )
        cell = mrow.cells.get(column)
        variant = str(r.labels.get("variant") or r.params.get("quantizer") or "")
        if cell is None or r.severity < cell.row.severity:
            mrow.cells[column] = MatrixCell(r, variants=cell.variants if cell else [])
        if variant:
            mrow.cells[column].variants.append(variant)
    in_process = _latest_metric(
        session, [r.case_id for r in rows if r.mode in MATRIX_MODES[1:]], OVER_EAGER, filters.branch
    )
    out = []
    for (gpu, ws), grid in sorted(grids.items(), key=lambda kv: (kv[0][0], kv[0][1] or 0)):
        columns = {c for mrow in grid.values() for c in mrow.cells}
        for mrow in grid.values():
            for (rank, mode), cell in mrow.cells.items():
                eager = mrow.cells.get((rank, "eager"))
                if mode not in MATRIX_MODES[1:]:
                    continue
                if in_process.get(cell.row.case_id) is not None:
                    cell.ratio = in_process[cell.row.case_id]
                elif eager and eager.row.latest_value and cell.row.latest_value is not None:
                    cell.ratio = cell.row.latest_value / eager.row.latest_value
        out.append(
            Matrix(
                gpu_model=gpu,
                world_size=ws,
                case_names=sorted(names[(gpu, ws)]),
                rows=sorted(grid.values(), key=lambda m: (m.backend or "", m.recipe or "", m.other)),
                rank_checks=[op for op in RANK_CHECK_OPS if any(c[1] == op for c in columns)],
                row_checks=[op for op in ROW_CHECK_OPS if (0, op) in columns],
            )
        )
    return out


# ------------------------------------------------------------------------------------------------ case


@dataclass
class SeriesSummary:
    series_id: int
    benchmark: str
    unit: str
    latest_value: float | None
    points: int


@dataclass
class CaseDetail:
    row: CaseRow
    compute_capability: str
    labels: dict
    series: list[SeriesSummary]
    history: list[VerdictView]


def case_detail(session: Session, case_id: int, branch: str = "", history: int = 30) -> CaseDetail | None:
    case = session.get(Case, case_id)
    if case is None:
        return None
    (row,) = case_rows(session, Filters(branch=branch), Case.id == case_id) or (None,)
    series_rows = session.execute(
        select(Series.id, Benchmark.name, Benchmark.unit)
        .join(Benchmark, Benchmark.id == Series.benchmark_id)
        .where(Series.case_id == case_id)
        .order_by(Benchmark.name)
    ).all()
    sids = [s.id for s in series_rows]
    values = _latest_values(session, sids, branch)
    counts = (
        dict(
            session.execute(
                select(Result.series_id, func.count())
                .where(Result.series_id.in_(sids))
                .group_by(Result.series_id)
            ).all()
        )
        if sids
        else {}
    )
    hist_rows = session.execute(
        select(Verdict, Run.branch, Run.pr_number, Run.started_at, Run.uploaded_at, Commit.sha)
        .join(Run, Run.id == Verdict.run_id)
        .join(Commit, Commit.id == Run.commit_id)
        .where(Verdict.case_id == case_id)
        .order_by(Verdict.run_id.desc())
        .limit(history)
    ).all()
    return CaseDetail(
        row=row,
        compute_capability=case.compute_capability,
        labels=case.labels or {},
        series=[
            SeriesSummary(s.id, s.name, s.unit, values.get(s.id), counts.get(s.id, 0))
            for s in sorted(series_rows, key=lambda s: (primary_rank(s.name, s.unit), s.name))
        ],
        history=[
            _verdict_view(v, b, pr, started or uploaded, sha)
            for v, b, pr, started, uploaded, sha in hist_rows
        ],
    )


# ---------------------------------------------------------------------------------------------- series


@dataclass
class SeriesHeader:
    series_id: int
    benchmark: str
    unit: str
    higher_is_better: bool
    case_id: int
    case_name: str
    params: dict
    gpu_model: str
    compute_capability: str
    backend: str | None
    recipe: str | None


def series_header(session: Session, series_id: int) -> SeriesHeader | None:
    row = session.execute(
        select(Series.id, Benchmark.name, Benchmark.unit, Benchmark.higher_is_better, Case)
        .join(Benchmark, Benchmark.id == Series.benchmark_id)
        .join(Case, Case.id == Series.case_id)
        .where(Series.id == series_id)
    ).first()
    if row is None:
        return None
    sid, name, unit, hib, case = row
    return SeriesHeader(
        sid,
        name,
        unit,
        bool(hib),
        case.id,
        case.case_name,
        case.params or {},
        case.gpu_model,
        case.compute_capability,
        case.backend,
        case.recipe,
    )


@dataclass
class SeriesPoint:
    run_id: int
    sha: str
    at: datetime | None
    status: str
    value: float | None
    q_25: float | None
    q_75: float | None
    samples: list[float]
    verdict: str | None
    exception_class: str | None
    environment_id: int
    machine_id: int
    gpu_state: dict


def series_points(
    session: Session,
    header: SeriesHeader,
    branch: str = "",
    last: int | None = None,
    with_samples: bool = True,
    pr: int | None = None,
) -> list[SeriesPoint]:
    """The series along the commit axis (commit time, then run order), oldest first; `last` keeps the tail.
    With `pr`, the pull request's runs instead of the branch filter's. Without samples (a chart drawn in
    buckets), the points carry no GPU state either: buckets draw neither, and on a long history decoding
    them is most of the time."""
    columns = [
        Result.run_id,
        type_coerce(Result.status, String).label("status"),  # its value: no enum per row
        Result.value,
        Result.q_25,
        Result.q_75,
        Commit.sha,
        Commit.committed_at,
        Commit.ordered_at,
        Run.started_at,
        Run.environment_id,
        Run.machine_id,
    ]
    stmt = (
        select(*columns)
        .join(Run, Run.id == Result.run_id)
        .join(Commit, Commit.id == Run.commit_id)
        .where(Result.series_id == header.series_id, _runs_clause(branch, pr))
    )
    if last:
        # the tail's run ids first, from the (series, run) index: sorting whole rows would read every one
        tail = stmt.with_only_columns(Result.run_id).order_by(*newest_commit_first(Result.run_id)).limit(last)
        stmt = stmt.where(Result.run_id.in_(list(session.scalars(tail))))
    conn = session.connection()
    if with_samples:
        verdict_columns = [type_coerce(Verdict.status, String).label("verdict"), Verdict.exception_class]
        details = [Result.samples, Run.gpu_state, Verdict.gpu_state.label("verdict_gpu_state")]
        stmt = stmt.add_columns(*verdict_columns, *details).outerjoin(
            Verdict, and_(Verdict.run_id == Result.run_id, Verdict.case_id == header.case_id)
        )
        verdicts = None
    else:
        verdicts = _case_verdicts(conn, header.case_id)
    points, order = [], []
    with collector_paused():  # every point lives until the chart is drawn
        for row in conn.execute(stmt).tuples():
            (
                run_id,
                status,
                value,
                q_25,
                q_75,
                sha,
                committed_at,
                ordered_at,
                started_at,
                env_id,
                machine_id,
            ) = row[:11]
            samples: list = []
            gpu_state: dict = {}
            if verdicts is None:
                verdict, exception_class, stored_samples, run_gpu, verdict_gpu = row[11:]
                if isinstance(stored_samples, str):
                    stored_samples = json.loads(stored_samples)
                samples = [s for s in stored_samples or () if isinstance(s, (int, float))]
                gpu_state = dict(run_gpu or {})
                gpu_state.update(verdict_gpu or {})
            else:
                verdict, exception_class = verdicts.get(run_id, NO_VERDICT)
            order.append((_aware(ordered_at or committed_at), _aware(started_at), run_id))
            points.append(
                SeriesPoint(
                    run_id,
                    sha,
                    committed_at or started_at,
                    status,
                    value,
                    q_25,
                    q_75,
                    samples,
                    verdict,
                    exception_class,
                    env_id,
                    machine_id,
                    gpu_state,
                )
            )
    by_order = sorted(range(len(points)), key=order.__getitem__)
    return [points[i] for i in by_order]


NO_VERDICT: tuple[str | None, str | None] = (None, None)


def _case_verdicts(conn: Connection, case_id: int) -> dict[int, tuple[str, str | None]]:
    """run id -> (status, exception class) of every verdict of the case, read from the (case, run) index."""
    status = type_coerce(Verdict.status, String)
    rows = conn.execute(
        select(Verdict.run_id, status, Verdict.exception_class).where(Verdict.case_id == case_id)
    )
    return {run_id: (status, exception_class) for run_id, status, exception_class in rows}


def _aware(at: datetime | None) -> datetime:
    if at is None:
        return NO_DATE
    return at if at.tzinfo else at.replace(tzinfo=UTC)


def _runs_clause(branch: str, pr: int | None) -> ColumnElement[bool]:
    return Run.pr_number == pr if pr is not None else branch_clause(branch)


def series_length(session: Session, series_id: int, branch: str = "") -> int:
    return series_version(session, series_id, branch)[0]


def series_version(
    session: Session, series_id: int, branch: str = "", pr: int | None = None
) -> tuple[int, int]:
    """How many results the series has under the branch filter (or in pull request `pr`), and its newest run:
    changes on any upload."""
    count, newest = session.execute(
        select(func.count(), func.max(Result.run_id))
        .select_from(Result)
        .join(Run, Run.id == Result.run_id)
        .where(Result.series_id == series_id, _runs_clause(branch, pr))
    ).one()
    return count or 0, newest or 0


def pr_comparison(session: Session, series_id: int, pr: int) -> PrComparison | None:
    """The newest comparison of pull request `pr` on this series (a re-run supersedes older ones)."""
    return session.scalars(
        select(PrComparison)
        .where(PrComparison.pr_number == pr, PrComparison.series_id == series_id)
        .order_by(PrComparison.id.desc())
        .limit(1)
    ).first()


def stack_versions(session: Session, environment_ids: set[int], machine_ids: set[int]) -> tuple[dict, dict]:
    envs = {e.id: e for e in session.scalars(select(Environment).where(Environment.id.in_(environment_ids)))}
    machines = {m.id: m for m in session.scalars(select(Machine).where(Machine.id.in_(machine_ids)))}
    return envs, machines


def failed_points(
    session: Session, header: SeriesHeader, branch: str = "", limit: int = 5
) -> list[VerdictView]:
    """The latest failed verdicts of the series' case, with their error text."""
    rows = session.execute(
        select(Verdict, Run.branch, Run.pr_number, Run.started_at, Run.uploaded_at, Commit.sha)
        .join(Run, Run.id == Verdict.run_id)
        .join(Commit, Commit.id == Run.commit_id)
        .where(
            Verdict.case_id == header.case_id,
            Verdict.status.in_(FAILING),
            branch_clause(branch),
        )
        .order_by(Verdict.run_id.desc())
        .limit(limit)
    ).all()
    return [_verdict_view(v, b, pr, started or uploaded, sha) for v, b, pr, started, uploaded, sha in rows]


# ------------------------------------------------------------------------------------- runs, machines


@dataclass
class RunRow:
    run: Run
    machine: Machine
    environment: Environment
    commit: Commit
    counts: dict[str, int]


def runs(
    session: Session, page: int = 1, per_page: int = 50, gpu: str = "", repo: str = ""
) -> tuple[list[RunRow], int]:
    """Newest first, of one GPU model and one repository where they are given."""
    stmt = in_run_context(select(Run, Machine, Environment, Commit))
    count_stmt = select(func.count()).select_from(Run)
    if gpu:
        stmt = stmt.where(Machine.gpu_model == gpu)
        count_stmt = count_stmt.join(Machine, Machine.id == Run.machine_id).where(Machine.gpu_model == gpu)
    if repo:
        stmt = stmt.where(Commit.repo == repo)
        count_stmt = count_stmt.join(Commit, Commit.id == Run.commit_id).where(Commit.repo == repo)
    total = session.scalar(count_stmt) or 0
    rows = session.execute(stmt.order_by(Run.id.desc()).limit(per_page).offset((page - 1) * per_page)).all()
    counts = verdict_counts(session, [r for r, *_ in rows])
    return [RunRow(r, m, e, c, counts.get(r.id, {})) for r, m, e, c in rows], total


def run_repos(session: Session) -> list[str]:
    """The repositories runs are filed under, in name order ("" for runs filed without one)."""
    used = select(Run.commit_id)
    return list(
        session.scalars(select(Commit.repo).where(Commit.id.in_(used)).distinct().order_by(Commit.repo))
    )


def verdict_counts(session: Session, runs: list[Run]) -> dict[int, dict[str, int]]:
    """Verdict counts per run: from the summary written at ingest, counted only for runs without one."""
    out: dict[int, dict[str, int]] = {r.id: dict((r.summary or {}).get("verdicts") or {}) for r in runs}
    run_ids = [r.id for r in runs if not out[r.id]]
    if not run_ids:
        return out
    for run_id, status, n in session.execute(
        select(Verdict.run_id, Verdict.status, func.count())
        .where(Verdict.run_id.in_(run_ids))
        .group_by(Verdict.run_id, Verdict.status)
    ):
        out[run_id][status.value] = n
    return out


@dataclass
class RunDetail:
    row: RunRow
    verdicts: list[tuple[Case, Verdict]]  # every failure, then up to `others_shown` of the rest
    verdict_total: int
    result_count: int


FAILING = tuple(sorted(FAILING_STATUSES))


def run_detail(session: Session, run_id: int, others_shown: int = 300) -> RunDetail | None:
    found = session.execute(
        in_run_context(select(Run, Machine, Environment, Commit)).where(Run.id == run_id)
    ).first()
    if found is None:
        return None
    run, machine, env, commit = found
    pairs = select(Case, Verdict).join(Verdict, Verdict.case_id == Case.id).where(Verdict.run_id == run_id)
    failing = session.execute(pairs.where(Verdict.status.in_(FAILING))).all()
    others = session.execute(
        pairs.where(Verdict.status.not_in(FAILING))
        .order_by(Verdict.status, Case.case_name, Case.id)
        .limit(others_shown)
    ).all()
    ordered = sorted(
        failing, key=lambda cv: (cv[0].case_name, json.dumps(cv[0].params, sort_keys=True, default=str))
    )
    ordered += sorted(
        others,
        key=lambda cv: (
            severity(cv[1].status.value, None),
            cv[0].case_name,
            json.dumps(cv[0].params, sort_keys=True, default=str),
        ),
    )
    counts = verdict_counts(session, [run])
    result_count = (
        sum(((run.summary or {}).get("results") or {}).values())
        or session.scalar(select(func.count()).select_from(Result).where(Result.run_id == run_id))
        or 0
    )
    return RunDetail(
        RunRow(run, machine, env, commit, counts.get(run_id, {})),
        [tuple(cv) for cv in ordered],
        sum(counts.get(run_id, {}).values()),
        result_count,
    )


@dataclass
class MachineRow:
    machine: Machine
    runs: int
    last_run_id: int | None  # the run that started last (by upload time where a run recorded no start)
    last_run_started: datetime | None  # its start, the time /runs shows; None if it recorded none
    last_run_uploaded: datetime | None
    environments: list[Environment]


def machines(session: Session) -> list[MachineRow]:
    when = func.coalesce(Run.started_at, Run.uploaded_at)
    ranked = select(
        Run.machine_id,
        Run.id,
        Run.started_at,
        Run.uploaded_at,
        func.count().over(partition_by=Run.machine_id).label("n"),
        func.row_number()
        .over(partition_by=Run.machine_id, order_by=(when.desc(), Run.id.desc()))
        .label("rank"),
    ).subquery()
    stats = {
        row.machine_id: (row.n, row.id, row.started_at, row.uploaded_at)
        for row in session.execute(select(ranked).where(ranked.c.rank == 1))
    }
    env_pairs = session.execute(select(Run.machine_id, Run.environment_id).distinct()).all()
    env_ids = {e for _m, e in env_pairs}
    envs = {e.id: e for e in session.scalars(select(Environment).where(Environment.id.in_(env_ids)))}
    per_machine: dict[int, list[Environment]] = defaultdict(list)
    for mid, eid in env_pairs:
        per_machine[mid].append(envs[eid])
    out = []
    for m in session.scalars(select(Machine).order_by(Machine.gpu_model, Machine.name, Machine.id)):
        n, last_id, started, uploaded = stats.get(m.id, (0, None, None, None))
        out.append(
            MachineRow(m, n, last_id, started, uploaded, sorted(per_machine[m.id], key=lambda e: e.id))
        )
    return out


def pr_runs(session: Session, number: int) -> list[RunRow]:
    rows = session.execute(
        in_run_context(select(Run, Machine, Environment, Commit))
        .where(Run.pr_number == number)
        .order_by(Run.id.desc())
    ).all()
    counts = verdict_counts(session, [r for r, *_ in rows])
    return [RunRow(r, m, e, c, counts.get(r.id, {})) for r, m, e, c in rows]


@dataclass(frozen=True)
class PrFailure:
    case: Case
    verdict: Verdict
    base_status: str  # the case's verdict on the merge base, "" when the base has no such case


@dataclass
class PrFailures:
    """A pull request's failing verdicts, split the way its `pr.report` splits them: `new` are the report's
    correctness failures, `known` failed (or at least did not pass) on the merge base already; and `fixed`,
    the report's cases fixed by the pull request (failing on the merge base, passing on the head)."""

    new: list[PrFailure] = field(default_factory=list)
    known: list[PrFailure] = field(default_factory=list)
    fixed: list[FixedCase] = field(default_factory=list)


def pr_failures(session: Session, runs: Sequence[Run]) -> PrFailures:
    """Failing verdicts of a pull request's head runs, each against its merge base as detection sees it
    (the report's `previous_verdicts` and `FAILING`), and the cases each run fixes (`fixed_cases`)."""
    out = PrFailures()
    for run in runs:
        before = previous_verdicts(session, run)
        out.fixed += fixed_cases(session, run, before)
        rows = session.execute(
            select(Case, Verdict)
            .join(Verdict, Verdict.case_id == Case.id)
            .where(Verdict.run_id == run.id, Verdict.status.in_(REPORT_FAILING))
            .order_by(Case.case_name, Case.id)
        ).all()
        for case, verdict in rows:
            previous = before.get(case.id)
            failure = PrFailure(case, verdict, previous.value if previous else "")
            (out.new if is_new_failure(verdict.status, previous) else out.known).append(failure)
    return out

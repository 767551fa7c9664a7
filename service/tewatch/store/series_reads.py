"""A series along the commit axis as typed points, for the pages' charts; its size, and a pull request's
comparison on it. Per-series look-ups walk the (series_id, run_id) index, so they stay cheap on a long
history."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import ColumnElement, Connection, String, and_, func, select, type_coerce

from tewatch.store.alert_models import PrComparison
from tewatch.store.case_reads import branch_clause
from tewatch.store.commit_order import NO_DATE, newest_commit_first
from tewatch.store.gc_pause import collector_paused
from tewatch.store.models import Benchmark, Case, Commit, Result, Run, Series, Verdict
from tewatch.store.table_rows import PrComparisonFacts, columns, row_of


@dataclass(frozen=True)
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


def series_header(conn: Connection, series_id: int) -> SeriesHeader | None:
    row = conn.execute(
        select(
            Series.id,
            Benchmark.name,
            Benchmark.unit,
            Benchmark.higher_is_better,
            Case.id,
            Case.case_name,
            Case.params,
            Case.gpu_model,
            Case.compute_capability,
            Case.backend,
            Case.recipe,
        )
        .join(Benchmark, Benchmark.id == Series.benchmark_id)
        .join(Case, Case.id == Series.case_id)
        .where(Series.id == series_id)
    ).first()
    if row is None:
        return None
    sid, name, unit, hib, case_id, case_name, params, gpu, cc, backend, recipe = row
    return SeriesHeader(
        sid, name, unit, bool(hib), case_id, case_name, params or {}, gpu, cc, backend, recipe
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


def runs_clause(branch: str | None, pr: int | None) -> ColumnElement[bool]:
    """The runs of pull request `pr`; without one, those under the branch filter (branch_clause)."""
    return Run.pr_number == pr if pr is not None else branch_clause(branch)


def series_points(
    conn: Connection,
    header: SeriesHeader,
    branch: str | None = "",
    last: int | None = None,
    with_samples: bool = True,
    pr: int | None = None,
) -> list[SeriesPoint]:
    """The series along the commit axis (commit time, then run order), oldest first; `last` keeps the tail.
    With `pr`, the pull request's runs instead of the branch filter's. Without samples (a chart drawn in
    buckets), the points carry no GPU state either: buckets draw neither, and on a long history decoding
    them is most of the time."""
    point_columns = [
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
        select(*point_columns)
        .join(Run, Run.id == Result.run_id)
        .join(Commit, Commit.id == Run.commit_id)
        .where(Result.series_id == header.series_id, runs_clause(branch, pr))
    )
    if last:
        # the tail's run ids first, from the (series, run) index: sorting whole rows would read every one
        tail = stmt.with_only_columns(Result.run_id).order_by(*newest_commit_first(Result.run_id)).limit(last)
        stmt = stmt.where(Result.run_id.in_(list(conn.scalars(tail))))
    if with_samples:
        verdict_columns = [type_coerce(Verdict.status, String).label("verdict"), Verdict.exception_class]
        details = [Result.samples, Run.gpu_state, Verdict.gpu_state.label("verdict_gpu_state")]
        stmt = stmt.add_columns(*verdict_columns, *details).outerjoin(
            Verdict, and_(Verdict.run_id == Result.run_id, Verdict.case_id == header.case_id)
        )
        verdicts = None
    else:
        verdicts = case_verdict_statuses(conn, header.case_id)
    points, order = [], []
    with collector_paused():  # every point lives until the chart is drawn
        rows: Iterable[Sequence[Any]] = conn.execute(stmt)
        for row in rows:
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


def case_verdict_statuses(conn: Connection, case_id: int) -> dict[int, tuple[str | None, str | None]]:
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


def series_version(
    conn: Connection, series_id: int, branch: str | None = "", pr: int | None = None
) -> tuple[int, int]:
    """How many results the series has under the branch filter (or in pull request `pr`), and its newest run:
    changes on any upload."""
    count, newest = conn.execute(
        select(func.count(), func.max(Result.run_id))
        .select_from(Result)
        .join(Run, Run.id == Result.run_id)
        .where(Result.series_id == series_id, runs_clause(branch, pr))
    ).one()
    return count or 0, newest or 0


def pr_comparison(conn: Connection, series_id: int, pr: int) -> PrComparisonFacts | None:
    """The newest comparison of pull request `pr` on this series (a re-run supersedes older ones)."""
    found = conn.execute(
        select(*columns(PrComparisonFacts))
        .where(PrComparison.pr_number == pr, PrComparison.series_id == series_id)
        .order_by(PrComparison.id.desc())
        .limit(1)
    ).first()
    return row_of(PrComparisonFacts, found) if found is not None else None

"""A series along the commit axis as typed points: one reader for the pages' charts (SeriesPoint) and the
API's answer (DetailedPoint), choosing the runs (a branch, the history outside pull requests, or one pull
request), the tail and the commit order once; the series' size, and a pull request's comparison on it.
Per-series look-ups walk the (series_id, run_id) index, so they stay cheap on a long history."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Connection,
    CursorResult,
    Select,
    String,
    Text,
    and_,
    cast,
    func,
    select,
    type_coerce,
)

from tewatch.store.engine.gc_pause import collector_paused
from tewatch.store.reads.case_reads import branch_clause
from tewatch.store.reads.commit_order import newest_commit_first, oldest_commit_first
from tewatch.store.reads.key_lists import in_key_list
from tewatch.store.reads.table_rows import PrComparisonFacts, columns, row_of
from tewatch.store.schema.alert_models import PrComparison
from tewatch.store.schema.models import (
    Benchmark,
    Case,
    Commit,
    Environment,
    Machine,
    Result,
    Run,
    Series,
    Verdict,
)


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
    machine: str = ""
    # the same benchmark of the same case on the GPU model's other machines: (machine, series id)
    other_machines: tuple[tuple[str, int], ...] = ()


def one_series(series_id: int, *columns: Any) -> Select:
    """`columns` of series `series_id` and of its benchmark and case: a series' header."""
    return (
        select(*columns)
        .join(Benchmark, Benchmark.id == Series.benchmark_id)
        .join(Case, Case.id == Series.case_id)
        .where(Series.id == series_id)
    )


def series_header(conn: Connection, series_id: int) -> SeriesHeader | None:
    row = conn.execute(
        one_series(
            series_id,
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
            Case.machine,
            Case.group_key,
            Series.benchmark_id,
        )
    ).first()
    if row is None:
        return None
    sid, name, unit, hib, case_id, case_name, params, gpu, cc, backend, recipe, machine, group, bid = row
    others = conn.execute(
        select(Case.machine, Series.id)
        .join(Case, Case.id == Series.case_id)
        .where(Case.group_key == group, Series.benchmark_id == bid, Series.id != sid)
        .order_by(Case.machine)
    ).all()
    return SeriesHeader(
        sid,
        name,
        unit,
        bool(hib),
        case_id,
        case_name,
        params or {},
        gpu,
        cc,
        backend,
        recipe,
        machine,
        tuple((m, i) for m, i in others),
    )


@dataclass(frozen=True)
class SeriesPoint:
    """A point as the pages draw it; `gpu_state` is the run's, updated by the verdict's."""

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


@dataclass(frozen=True)
class DetailedPoint:
    """A point as the API answers it: the result's asv figures, its run, commit, machine and TE version,
    the verdict and the verdict's own GPU state; `samples` None where not read or none were stored,
    thinned evenly where more were stored than a point carries."""

    run_id: int
    status: str
    value: float | None
    q_25: float | None
    q_75: float | None
    ci_99_a: float | None
    ci_99_b: float | None
    number: int | None
    repeat: int | None
    benchmark_version: str
    started_at: datetime | None
    branch: str | None
    pr_number: int | None
    uploaded_at: datetime
    commit_sha: str
    committed_at: datetime | None
    machine_id: int
    machine_name: str
    te_version: str
    verdict: str | None
    gpu_state: dict
    samples: list[float] | None
    sample_count: int | None  # samples stored, where read: more than `samples` holds where thinned


MAX_SAMPLES_PER_POINT = 10_000  # one result may store millions; a point carries this many at most
SAMPLES_PER_ANSWER = 500_000  # a page of points ends before its samples pass this
PAGE_CHUNK = 500  # runs read per query while a page fills


def runs_clause(branch: str | None, pr: int | None) -> ColumnElement[bool]:
    """The runs of pull request `pr`; without one, those under the branch filter (branch_clause)."""
    return Run.pr_number == pr if pr is not None else branch_clause(branch)


_STATUS = type_coerce(Result.status, String).label("status")  # its value: no enum per row
_VERDICT = type_coerce(Verdict.status, String).label("verdict")
_CHART = (  # a chart's point; the results' part is in the (series, run) index
    Result.run_id,
    _STATUS,
    Result.value,
    Result.q_25,
    Result.q_75,
    Commit.sha,
    Commit.committed_at,
    Run.started_at,
    Run.environment_id,
    Run.machine_id,
)
# the samples as their stored JSON text: a long list is read where it lies (sample_view), not decoded
STORED_SAMPLES = cast(Result.samples, Text).label("samples")
_CHART_EXTRAS = (  # and where drawn in detail
    _VERDICT,
    Verdict.exception_class,
    STORED_SAMPLES,
    Run.gpu_state,
    Verdict.gpu_state.label("verdict_gpu_state"),
)
DETAIL_COLUMNS = (  # DetailedPoint's fields but samples, in order
    Result.run_id,
    _STATUS,
    Result.value,
    Result.q_25,
    Result.q_75,
    Result.ci_99_a,
    Result.ci_99_b,
    Result.number,
    Result.repeat,
    Result.benchmark_version,
    Result.started_at,
    Run.branch,
    Run.pr_number,
    Run.uploaded_at,
    Commit.sha.label("commit_sha"),
    Commit.committed_at,
    Run.machine_id,
    Machine.name.label("machine_name"),
    Environment.te_version,
    _VERDICT,
    Verdict.gpu_state,
)
_EXTRAS = len(_CHART)  # where a chart point's extras start
_SAMPLES = len(DETAIL_COLUMNS)  # where a detailed point's samples are


def _points_of(case_id: int, *selected: Any, verdict: bool = True) -> Select:
    """`selected` of results with their run, commit and (`verdict`) the case's verdict."""
    statement = (
        select(*selected)
        .select_from(Result)
        .join(Run, Run.id == Result.run_id)
        .join(Commit, Commit.id == Run.commit_id)
    )
    if verdict:
        statement = statement.outerjoin(
            Verdict, and_(Verdict.run_id == Result.run_id, Verdict.case_id == case_id)
        )
    return statement


def _in_commit_order(
    conn: Connection, statement: Select, series_id: int, branch: str | None, pr: int | None, last: int | None
) -> CursorResult[Any]:
    """The rows of `statement` (_points_of) for the series' results in the chosen runs (runs_clause), the
    newest `last` of them where given, oldest first in commit order."""
    chosen = (Result.series_id == series_id, runs_clause(branch, pr))
    statement = statement.where(*chosen).order_by(*oldest_commit_first(Result.run_id))
    if last:
        statement = statement.where(in_key_list(conn, Result.run_id, _tail(conn, chosen, last), "tail"))
    return conn.execute(statement)


def _tail(conn: Connection, chosen: Sequence[ColumnElement[bool]], last: int, skip: int = 0) -> list[int]:
    """The run ids of the newest `last` results after the newest `skip`, newest first, from the
    (series, run) index: sorting whole rows would read every one."""
    newest = (
        select(Result.run_id)
        .join(Run, Run.id == Result.run_id)
        .join(Commit, Commit.id == Run.commit_id)
        .where(*chosen)
        .order_by(*newest_commit_first(Result.run_id))
        .limit(last)
        .offset(skip)
    )
    return list(conn.scalars(newest))


def series_points(
    conn: Connection,
    header: SeriesHeader,
    branch: str | None = "",
    last: int | None = None,
    with_samples: bool = True,
    pr: int | None = None,
    samples_per_point: int = MAX_SAMPLES_PER_POINT,
) -> list[SeriesPoint]:
    """The series along the commit axis, oldest first; `last` keeps the tail. With `pr`, the pull
    request's runs instead of the branch filter's. Without samples (a chart drawn in buckets), the points
    carry no GPU state either: buckets draw neither, and on a long history decoding them is most of the
    time. With them, each point keeps `samples_per_point` of its samples at most (thinned)."""
    if with_samples:
        statement = _points_of(header.case_id, *_CHART, *_CHART_EXTRAS)
        verdicts = None
    else:
        statement = _points_of(header.case_id, *_CHART, verdict=False)
        verdicts = case_verdict_statuses(conn, header.case_id)
    points = []
    with collector_paused():  # every point lives until the chart is drawn
        for row in _in_commit_order(conn, statement, header.series_id, branch, pr, last):
            run_id, status, value, q_25, q_75, sha, committed, started, env_id, machine_id = row[:_EXTRAS]
            samples: list = []
            gpu_state: dict = {}
            if verdicts is None:
                verdict, exception_class, stored_samples, run_gpu, verdict_gpu = row[_EXTRAS:]
                samples = sample_view(stored_samples, samples_per_point)[0] or []
                gpu_state = {**(run_gpu or {}), **(verdict_gpu or {})}
            else:
                verdict, exception_class = verdicts.get(run_id, NO_VERDICT)
            points.append(
                SeriesPoint(
                    run_id,
                    sha,
                    committed or started,
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
    return points


@dataclass(frozen=True)
class PointPage:
    """Newest points first chosen, given oldest first; `next_offset` skips them, None when no older point
    is left."""

    points: list[DetailedPoint]
    next_offset: int | None


def detailed_points(
    conn: Connection,
    series_id: int,
    case_id: int,
    branch: str | None = "",
    last: int = 1000,
    with_samples: bool = True,
    pr: int | None = None,
    skip: int = 0,
    samples_per_point: int = MAX_SAMPLES_PER_POINT,
    sample_budget: int = SAMPLES_PER_ANSWER,
) -> PointPage:
    """The points series_points reads, in its order, with what the API answers of each: the newest `last`
    after the newest `skip`, fewer where their samples (each point's thinned to `samples_per_point`) would
    pass `sample_budget`; the newest point is always given."""
    statement = (
        _points_of(case_id, *DETAIL_COLUMNS)
        .join(Machine, Machine.id == Run.machine_id)
        .join(Environment, Environment.id == Run.environment_id)
    )
    if with_samples:
        statement = statement.add_columns(STORED_SAMPLES)
    chosen = (Result.series_id == series_id, runs_clause(branch, pr))
    statement = statement.where(*chosen).order_by(*newest_commit_first(Result.run_id))
    run_ids = _tail(conn, chosen, last + 1, skip)
    older_left = len(run_ids) > last
    points: list[DetailedPoint] = []
    drawn = 0
    with collector_paused():
        for start in range(0, min(len(run_ids), last), PAGE_CHUNK):
            chunk = run_ids[start : min(start + PAGE_CHUNK, last)]
            for row in conn.execute(statement.where(in_key_list(conn, Result.run_id, chunk, "page"))):
                *facts, gpu_state = row[:_SAMPLES]
                samples, count = (
                    sample_view(row[_SAMPLES], samples_per_point) if with_samples else (None, None)
                )
                if points and drawn + len(samples or ()) > sample_budget:
                    return PointPage(points[::-1], skip + len(points))
                drawn += len(samples or ())
                points.append(
                    row_of(
                        DetailedPoint,
                        (*facts, gpu_state or {}, samples, count),
                    )
                )
    return PointPage(points[::-1], skip + len(points) if older_left else None)


EXACT_BELOW = 1 << 16  # characters of stored samples decoded whole; a longer list is read where it lies


def sample_view(stored: str | None, most: int) -> tuple[list[float] | None, int | None]:
    """At most `most` of the samples stored as this JSON text, evenly spaced, and how many there are;
    (None, None) where none were stored. A list longer than EXACT_BELOW characters is not decoded: its
    entries are counted by their commas and `most` of them parsed where they lie, evenly spaced by
    position in the text, so a result of millions of samples costs a scan of its text, not a decode."""
    if stored is None:
        return None, None
    count = stored.count(",") + 1
    if len(stored) < EXACT_BELOW or count <= most:
        numbers = _numbers(stored)
        return (None, None) if numbers is None else (thinned(numbers, most), len(numbers))
    picked = []
    last = len(stored) - 1
    for i in range(most):
        at = 1 + (last - 1) * i // max(most - 1, 1)
        end = stored.find(",", at)
        token = stored[stored.rfind(",", 0, at) + 1 : end if end >= 0 else last + 1].strip(" []\n\t\r")
        try:
            picked.append(float(token))
        except ValueError:
            continue  # not a number: left out, as _numbers leaves it
    return picked, count


def thinned(samples: list[float], most: int) -> list[float]:
    """At most `most` of `samples`, evenly spaced in their order, the first and last kept."""
    if len(samples) <= most:
        return samples
    if most < 2:
        return samples[:most]
    step = (len(samples) - 1) / (most - 1)
    return [samples[round(i * step)] for i in range(most)]


def _numbers(stored: Any) -> list[float] | None:
    """Stored samples as numbers; None where none were stored."""
    if isinstance(stored, str):
        stored = json.loads(stored)
    return None if stored is None else [s for s in stored if isinstance(s, (int, float))]


NO_VERDICT: tuple[str | None, str | None] = (None, None)


def case_verdict_statuses(conn: Connection, case_id: int) -> dict[int, tuple[str | None, str | None]]:
    """run id -> (status, exception class) of every verdict of the case, read from the (case, run) index."""
    status = type_coerce(Verdict.status, String)
    rows = conn.execute(
        select(Verdict.run_id, status, Verdict.exception_class).where(Verdict.case_id == case_id)
    )
    return {run_id: (status, exception_class) for run_id, status, exception_class in rows}


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

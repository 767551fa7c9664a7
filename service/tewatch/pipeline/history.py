"""Reading series history out of the store, in commit order, for the detectors."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cache
from typing import cast

import numpy as np
from sqlalchemy import CompoundSelect, bindparam, func, select, union_all
from sqlalchemy.orm import Session

from tewatch.core.clock import as_utc
from tewatch.detect.ratios import Measured, paired_ratios
from tewatch.store.schema.models import (
    Benchmark,
    Case,
    Commit,
    Environment,
    Machine,
    Result,
    ResultStatus,
    Run,
    Series,
)

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class SeriesInfo:
    key: str  # the series fingerprint, or a ratio key
    series_id: int | None
    case_id: int | None
    benchmark: str
    params: dict
    unit: str
    higher_is_better: bool
    gpu_model: str
    kind: str = ""  # the benchmark's type: asv's ("track", "time"...) or "metric" (a case record's metric)
    environment: str = ""  # asv's environment where it is part of the case's identity
    backend: str = ""  # the case's backend label (te, te-ref, torch-ref), where it has one
    machine: str = ""  # the asv machine of the case

    @property
    def measured_where(self) -> str:
        """What a ratio of this series is keyed by: its GPU model and machine (two machines' ratios are
        two histories, as their series are)."""
        return f"{self.gpu_model}@{self.machine}" if self.machine else self.gpu_model

    @property
    def label(self) -> str:
        params = ", ".join(f"{k}={v}" for k, v in sorted(self.params.items()))
        label = f"{self.benchmark}({params})" if params else self.benchmark
        return f"{label} [{self.environment}]" if self.environment else label


@dataclass
class Point:
    run_id: int
    commit_id: int
    sha: str
    value: float
    environment: dict[str, str]
    machine_id: int = 0  # 0 on derived (ratio) series


@dataclass
class History:
    info: SeriesInfo
    points: list[Point] = field(default_factory=list)

    @property
    def values(self) -> np.ndarray:
        return np.array([p.value for p in self.points], dtype=float)


def _aware(moment: datetime | None) -> datetime:
    if moment is None:
        return _EPOCH
    return as_utc(moment)


def run_order(
    committed_at: datetime | None, started_at: datetime | None, uploaded_at: datetime | None, run_id: int
) -> tuple:
    """Where a run sits in a branch's history: its commit's place (git graph, else date), then run start,
    then upload."""
    return (_aware(committed_at), _aware(started_at or uploaded_at), run_id)


def _environment(machine: Machine, environment: Environment) -> dict[str, str]:
    return {
        "driver": machine.driver,
        "cuda": machine.cuda,
        "cublaslt": machine.cublaslt,
        "cudnn": machine.cudnn,
        "torch": environment.torch,
        "te_version": environment.te_version,
    }


def branch_histories(
    session: Session, branch: str, series_ids: Iterable[int] | None = None, with_ratios: bool = True
) -> list[History]:
    """Every series' history on a branch (pull request runs excluded), one point per commit in commit
    order (tewatch.store.reads.commit_order); several runs of one commit give their median."""
    query = (
        select(
            Result.series_id,
            Result.value,
            Result.run_id,
            Run.started_at,
            Run.uploaded_at,
            Commit.id,
            Commit.sha,
            func.coalesce(Commit.ordered_at, Commit.committed_at),
            Run.machine_id,
            Run.environment_id,
        )
        .join(Run, Result.run_id == Run.id)
        .join(Commit, Run.commit_id == Commit.id)
        .where(
            Run.branch == branch,
            Run.pr_number.is_(None),
            Result.status == ResultStatus.ok,
            Result.value.is_not(None),
        )
    )
    wanted = set(series_ids) if series_ids is not None else None
    if wanted is not None:
        query = query.where(Result.series_id.in_(wanted))
    rows = session.execute(query).all()
    if not rows:
        return []
    info = series_infos(session, {r[0] for r in rows})
    environments = _environments(session, {(r[8], r[9]) for r in rows})
    order: dict[int, tuple] = {}
    by_series_commit: dict[int, dict[int, list]] = defaultdict(lambda: defaultdict(list))
    per_run: dict[int, list[Measured]] = defaultdict(list)
    run_meta = {}
    for (
        series_id,
        value,
        run_id,
        started_at,
        uploaded_at,
        commit_id,
        sha,
        committed_at,
        machine_id,
        env_id,
    ) in rows:
        key = run_order(committed_at, started_at, uploaded_at, run_id)
        order[commit_id] = min(order.get(commit_id, key), key)
        env = environments[(machine_id, env_id)]
        by_series_commit[series_id][commit_id].append((run_id, sha, value, env, machine_id))
        run_meta[run_id] = (commit_id, sha, env)
        if with_ratios:
            s = info[series_id]
            per_run[run_id].append(
                Measured(
                    benchmark=f"{s.benchmark}@{s.measured_where}", params=s.params, value=cast(float, value)
                )  # the query reads non-null values only
            )
    histories = []
    for series_id, commits in by_series_commit.items():
        history = History(info=info[series_id])
        for commit_id in sorted(commits, key=order.__getitem__):
            runs = commits[commit_id]
            run_id, sha, value, env, machine_id = max(runs, key=lambda r: r[0])
            if len(runs) > 1:
                value = float(np.median([r[2] for r in runs]))
            history.points.append(Point(run_id, commit_id, sha, value, env, machine_id))
        histories.append(history)
    if with_ratios:
        histories += ratio_histories(per_run, run_meta, order, info)
    return histories


def _environments(session: Session, pairs: set[tuple[int, int]]) -> dict[tuple[int, int], dict[str, str]]:
    machines = {
        m.id: m for m in session.scalars(select(Machine).where(Machine.id.in_({p[0] for p in pairs})))
    }
    envs = {
        e.id: e for e in session.scalars(select(Environment).where(Environment.id.in_({p[1] for p in pairs})))
    }
    return {(m, e): _environment(machines[m], envs[e]) for m, e in pairs}


def ratio_histories(per_run, run_meta, order, info: dict[int, SeriesInfo]) -> list[History]:
    units = {
        f"{s.benchmark}@{s.measured_where}": (s.unit, s.higher_is_better, s.gpu_model) for s in info.values()
    }
    series: dict[str, History] = {}
    for run_id in sorted(per_run, key=lambda r: order[run_meta[r][0]]):
        commit_id, sha, env = run_meta[run_id]
        for point in paired_ratios(per_run[run_id], resamples=0):
            unit, higher_better, gpu = units[point.benchmark]
            history = series.get(point.key)
            if history is None:
                history = series[point.key] = History(
                    SeriesInfo(
                        key=point.key,
                        series_id=None,
                        case_id=None,
                        benchmark=f"{point.benchmark} {point.ratio}",
                        params=dict(point.shared_params),
                        unit=f"ratio of {unit}",
                        higher_is_better=higher_better,
                        gpu_model=gpu,
                    )
                )
            if history.points and history.points[-1].commit_id == commit_id:
                continue
            history.points.append(Point(run_id, commit_id, sha, point.value, env))
    return list(series.values())


def series_infos(session: Session, series_ids: Iterable[int]) -> dict[int, SeriesInfo]:
    ids = list(set(series_ids))
    infos = {}
    for start in range(0, len(ids), 500):
        query = (
            select(
                Series.id,
                Series.fingerprint,
                Series.case_id,
                Benchmark.name,
                Benchmark.unit,
                Benchmark.higher_is_better,
                Benchmark.type,
                Case.params,
                Case.gpu_model,
                Case.environment,
                Case.backend,
                Case.machine,
            )
            .join(Benchmark, Series.benchmark_id == Benchmark.id)
            .join(Case, Series.case_id == Case.id)
            .where(Series.id.in_(ids[start : start + 500]))
        )
        for row in session.execute(query):
            infos[row.id] = SeriesInfo(
                key=row.fingerprint,
                series_id=row.id,
                case_id=row.case_id,
                benchmark=row.name,
                params=row.params or {},
                unit=row.unit,
                higher_is_better=row.higher_is_better,
                gpu_model=row.gpu_model,
                kind=row.type,
                environment=row.environment or "",
                backend=row.backend or "",
                machine=row.machine or "",
            )
    return infos


TAIL_QUERY_SERIES = 200  # tails read per statement: one index walk each, under SQLite's 500 compound terms
NO_SERIES = 0  # no series has id 0: the padding of a chunk's last statement finds nothing


def latest_values(session: Session, series_ids: list[int], count: int) -> dict[int, list[float]]:
    """The newest `count` positive `ok` values of each series outside pull requests, oldest first, in
    upload order (run ids). Each series' tail is a walk back along the (series, run) index that stops after
    `count` rows, so a long history costs what its tail does."""
    newest_first: dict[int, list[float]] = defaultdict(list)
    for start in range(0, len(series_ids), TAIL_QUERY_SERIES):
        chunk = series_ids[start : start + TAIL_QUERY_SERIES]
        chunk += [NO_SERIES] * (TAIL_QUERY_SERIES - len(chunk))  # one statement shape for every chunk
        parameters = {f"series_{i}": series_id for i, series_id in enumerate(chunk)}
        for series_id, value in session.execute(_tails_statement(TAIL_QUERY_SERIES, count), parameters):
            newest_first[series_id].append(value)
    return {series_id: found[::-1] for series_id, found in newest_first.items()}


@cache
def _tails_statement(series: int, count: int) -> CompoundSelect:
    """The tails of `series` series (parameters series_0 ...) in one statement, built once: building 200
    selects costs more than running them."""
    tails = [
        select(Result.series_id, Result.value)
        .join(Run, Result.run_id == Run.id)
        .where(
            Result.series_id == bindparam(f"series_{i}"),
            Run.pr_number.is_(None),
            Result.status == ResultStatus.ok,
            Result.value > 0,
        )
        .order_by(Result.run_id.desc())
        .limit(count)
        .subquery()
        .select()
        for i in range(series)
    ]
    return union_all(*tails)


def series_group_keys(session: Session, series_ids: Iterable[int]) -> dict[int, tuple[str, int]]:
    """Series id -> (its case's machine group, its benchmark): equal for one benchmark of one case on the
    machines of a GPU model."""
    ids = sorted(set(series_ids))
    keys: dict[int, tuple[str, int]] = {}
    for start in range(0, len(ids), 500):
        query = (
            select(Series.id, Case.group_key, Series.benchmark_id)
            .join(Case, Series.case_id == Case.id)
            .where(Series.id.in_(ids[start : start + 500]))
        )
        keys.update(
            (series_id, (group_key, benchmark_id))
            for series_id, group_key, benchmark_id in session.execute(query)
        )
    return keys

"""A pull request's memory and error values against its merge base's, judged by tewatch.detect.memory and
tewatch.detect.drift: bytes and error metrics are one value per run (or one per A/B round), so each side's
values of one series are runs of identical code, and their spread is the noise the rules learn. Metrics of
a family identical code does not reproduce (tewatch.detect.noise_families) are inconclusive until then."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence

from sqlalchemy import select
from sqlalchemy.orm import Session

from tewatch.detect.drift import Drift, DriftVerdict, ErrorMetric, error_drift, learn_error_band
from tewatch.detect.memory import (
    BytesChange,
    BytesVerdict,
    LeakFinding,
    compare_bytes,
    leak_finding,
    learn_bytes_noise,
)
from tewatch.detect.noise_families import noise_family
from tewatch.findings.pr_report import MemoryChange, NumericsChange
from tewatch.pipeline.history import SeriesInfo, series_infos
from tewatch.store.schema.alert_models import AlertKind
from tewatch.store.schema.models import Result, ResultStatus, Verdict

BYTES_UNIT = "bytes"
LEAK_METRIC = "leak_bytes_per_step"
LEAK_STDERR_METRIC = "leak_stderr_bytes_per_step"
SETUP_METRIC = "setup_allocated_bytes"


def metric_of(info: SeriesInfo) -> str:
    return info.benchmark.rpartition(".")[2]


def change_point_alert_kind(info: SeriesInfo) -> AlertKind:
    """The alert a worsening change point on a branch opens: `numerics` for an error metric, else
    `regression` (timings, throughput, bytes)."""
    return AlertKind.numerics if ErrorMetric.parse(metric_of(info)) else AlertKind.regression


def _values_by_series(session: Session, run_ids: Sequence[int]) -> dict[int, list[list[float]]]:
    """Series id -> one group of values per run (its A/B rounds' values, else its one value)."""
    found: dict[int, list[list[float]]] = defaultdict(list)
    if not run_ids:
        return found
    query = select(Result.series_id, Result.samples, Result.value).where(
        Result.run_id.in_(run_ids), Result.status == ResultStatus.ok
    )
    for series_id, samples, value in session.execute(query.order_by(Result.run_id)):
        values = [float(v) for v in (samples or ([value] if value is not None else [])) if v is not None]
        if values:
            found[series_id].append(values)
    return found


def _middle(groups: list[list[float]]) -> float:
    values = sorted(v for group in groups for v in group)
    return values[len(values) // 2]


Checks = dict[int, list[tuple[str, float, float]]]


def _checks(session: Session, run_id: int) -> Checks:
    """Case id -> its checks on the head run that hold a value to a tolerance: (metric, value, tolerance)."""
    found: Checks = defaultdict(list)
    for verdict in session.scalars(select(Verdict).where(Verdict.run_id == run_id)):
        checks = [
            {"metric": verdict.metric, "value": verdict.metric_value, "tolerance": verdict.tolerance},
            *(verdict.extra_checks or []),
        ]
        for check in checks:
            if isinstance(check, dict) and all(
                check.get(k) is not None for k in ("metric", "value", "tolerance")
            ):
                found[verdict.case_id].append(
                    (str(check["metric"]), float(check["value"]), float(check["tolerance"]))
                )
    return found


def tolerance_of(metric: ErrorMetric, value: float, checks: list[tuple[str, float, float]]) -> float | None:
    """The tolerance of the case's check that measured `metric`: one of its kind that found the same value
    (a check names its kind, `rel_l2`, not what it compared)."""
    for kind, checked, tolerance in checks:
        if kind == metric.kind and math.isclose(checked, value, rel_tol=1e-9, abs_tol=0.0):
            return tolerance
    return None


def memory_row(
    series_id: int,
    info: SeriesInfo,
    verdict: str,
    change: BytesChange | None,
    leak: LeakFinding | None,
    more: int,
) -> MemoryChange:
    text = [change.describe(metric_of(info))] if change else []
    if change and change.reason:
        text.append(change.reason)
    if leak is not None and leak.leak:
        text.append(leak.describe())
    if more:
        text.append(f"{more} more byte metric{'s' if more > 1 else ''} of the case changed")
    return MemoryChange(
        benchmark=info.label,
        case_id=info.case_id,
        series_id=series_id,
        verdict=verdict,
        base_bytes=change.base if change else None,
        head_bytes=change.head if change else None,
        change_bytes=change.change if change else None,
        change_share=change.share if change and change.base else None,
        leak_bytes_per_step=leak.slope if leak else None,
        leak=bool(leak and leak.leak),
        other_changes=more,
        description="; ".join(text),
    )


def numerics_row(series_id: int, info: SeriesInfo, drift: Drift) -> NumericsChange:
    return NumericsChange(
        benchmark=info.label,
        case_id=info.case_id,
        series_id=series_id,
        metric=drift.metric.label,
        verdict=drift.verdict.value,
        base=drift.base,
        head=drift.head,
        change=drift.change,
        tolerance=drift.tolerance,
        description=drift.describe(),
    )


def _case_key(info: SeriesInfo) -> tuple[int | None, str]:
    return info.case_id, info.benchmark.rpartition(".")[0]


def memory_changes(
    infos: dict[int, SeriesInfo], head: dict[int, list[list[float]]], base: dict[int, list[list[float]]]
) -> list[MemoryChange]:
    """A row per case whose bytes changed (of its regressions and improvements, else of its inconclusive
    changes: the setup's change, which is what the case keeps, else the largest) or whose training steps
    leak on the head, with its leak slope: leaks first, then regressions, inconclusive and improvements,
    each largest first."""
    slopes: dict[tuple[int | None, str], dict[str, list[list[float]]]] = defaultdict(dict)
    for series_id, info in infos.items():
        if metric_of(info) in (LEAK_METRIC, LEAK_STDERR_METRIC) and series_id in head:
            slopes[_case_key(info)][metric_of(info)] = head[series_id]
    leaks = {}
    for key, found in slopes.items():
        if LEAK_METRIC in found:
            slope, stderr = _middle(found[LEAK_METRIC]), _middle(found.get(LEAK_STDERR_METRIC, [[0.0]]))
            leaks[key] = leak_finding(slope, stderr)
    by_case: dict[tuple[int | None, str], list[tuple[int, SeriesInfo, BytesChange]]] = defaultdict(list)
    for series_id, info in infos.items():
        if info.unit != BYTES_UNIT or series_id not in head or series_id not in base:
            continue
        noise = learn_bytes_noise([*head[series_id], *base[series_id]])
        change = compare_bytes(
            _middle(base[series_id]), _middle(head[series_id]), noise, noise_family(metric_of(info))
        )
        if change.verdict is not BytesVerdict.unchanged:
            by_case[_case_key(info)].append((series_id, info, change))
    rows = []
    for key, changes in by_case.items():
        decided = [c for c in changes if c[2].verdict is not BytesVerdict.inconclusive] or changes
        setup = [c for c in decided if metric_of(c[1]) == SETUP_METRIC]
        series_id, info, change = setup[0] if setup else max(decided, key=lambda c: abs(c[2].change))
        row = memory_row(series_id, info, change.verdict.value, change, leaks.get(key), len(changes) - 1)
        rows.append(row)
    for key, leak in leaks.items():
        if leak.leak and key not in by_case:
            series_id, info = next(
                (s, i) for s, i in infos.items() if _case_key(i) == key and metric_of(i) == LEAK_METRIC
            )
            rows.append(memory_row(series_id, info, "leak", None, leak, 0))
    order = {"leak": 0, "regression": 1, "inconclusive": 2, "improvement": 3}
    return sorted(
        rows, key=lambda r: (not r.leak, order[r.verdict], -abs(r.change_bytes or 0.0), r.benchmark)
    )


def numerics_changes(
    infos: dict[int, SeriesInfo],
    head: dict[int, list[list[float]]],
    base: dict[int, list[list[float]]],
    checks: Checks,
) -> list[NumericsChange]:
    """Every error metric that moved beyond what identical code does: drift (worse), improvement, then
    inconclusive (a family identical code does not reproduce, its band not learned yet), largest first."""
    metrics = {s: m for s, i in infos.items() if (m := ErrorMetric.parse(metric_of(i))) and s in head}
    rows = []
    for series_id, metric in metrics.items():
        info = infos[series_id]
        if series_id not in base:
            continue
        band = learn_error_band([*head[series_id], *base[series_id]])
        case_checks = checks.get(info.case_id, []) if info.case_id is not None else []
        value = _middle(head[series_id])
        tolerance = tolerance_of(metric, value, case_checks)
        family = noise_family(metric_of(info))
        drift = error_drift(metric, _middle(base[series_id]), value, band, tolerance, family)
        if drift.verdict is not DriftVerdict.unchanged:
            rows.append(numerics_row(series_id, info, drift))
    order = {
        DriftVerdict.drift.value: 0,
        DriftVerdict.improvement.value: 1,
        DriftVerdict.inconclusive.value: 2,
    }
    return sorted(rows, key=lambda r: (order[r.verdict], -abs(r.change), r.benchmark))


def memory_and_numerics(
    session: Session, head_run_id: int, base_run_ids: Sequence[int]
) -> tuple[list[MemoryChange], list[NumericsChange]]:
    """The Memory and Numerics sections of a head run's report against `base_run_ids`."""
    head = _values_by_series(session, [head_run_id])
    base = _values_by_series(session, base_run_ids)
    infos = series_infos(session, list(head))
    wanted = {
        s: i
        for s, i in infos.items()
        if i.unit == BYTES_UNIT
        or metric_of(i) in (LEAK_METRIC, LEAK_STDERR_METRIC)
        or ErrorMetric.parse(metric_of(i))
    }
    return (
        memory_changes(wanted, head, base),
        numerics_changes(wanted, head, base, _checks(session, head_run_id)),
    )

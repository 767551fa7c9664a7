"""A pull request's run against its merge base: every series' samples compared (noise from the branch's
recent history), the verdicts per case, the `pr.report` event with its Markdown; planned first, then
written (comparisons, regression alerts, the event) in one transaction."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np
from sqlalchemy import select
from sqlalchemy.orm import Session

from tewatch.alerts.events import EventType, emit
from tewatch.alerts.lifecycle import open_alert
from tewatch.alerts.markdown import render_pr_report
from tewatch.core.metric_names import KERNEL_SECONDS, NOT_CALL_TIMES, TRACK_SECONDS
from tewatch.detect.changepoint import clip_outliers, robust_sigma
from tewatch.detect.compare import (
    ComparePair,
    CompareVerdict,
    Comparison,
    Side,
    compare_sweep,
    kernel_against_event,
)
from tewatch.detect.config import ChangePointConfig, CompareConfig
from tewatch.detect.version import DETECTOR_VERSION
from tewatch.findings.pr_report import CaseFailure, PrReport, PrReportPayload
from tewatch.pipeline.correctness import FixedCase
from tewatch.pipeline.history import SeriesInfo, latest_values, series_group_keys, series_infos
from tewatch.pipeline.labels import machine_of, measured_on
from tewatch.pipeline.merge_base import merge_base_runs
from tewatch.pipeline.pr_report import SeriesFinding, build_pr_report, report_inputs
from tewatch.pipeline.summary import DetectSummary
from tewatch.store.schema.alert_models import AlertKind, PrComparison
from tewatch.store.schema.models import Result, ResultStatus, Run

HISTORY_FOR_NOISE = 60


def between_run_sigmas(session: Session, series_ids: list[int]) -> dict[int, float]:
    """Run-to-run noise of each series (log units), from its latest non-PR history."""
    config = ChangePointConfig()
    sigmas = {}
    for series_id, values in latest_values(session, series_ids, HISTORY_FOR_NOISE).items():
        if len(values) >= 8:
            tail = np.log(np.asarray(values))
            clipped = clip_outliers(tail, robust_sigma(tail, config.sigma_floor), config.winsor_k)
            sigmas[series_id] = robust_sigma(clipped, config.sigma_floor)
    return sigmas


def _sides(rows: list[tuple[list | None, float | None, list | None]]) -> Side:
    """One side from the results of one or more runs: several runs, or A/B rounds, are rounds."""
    samples: list[float] = []
    sizes: list[int] = []
    for run_samples, value, round_sizes in rows:
        values = list(run_samples or ([value] if value is not None else []))
        samples += values
        sizes += list(round_sizes) if round_sizes and sum(round_sizes) == len(values) else [len(values)]
    return Side(samples, sizes if len(sizes) > 1 else None)


def _compared(info: SeriesInfo, head: Side) -> bool:
    """Metrics of one value per run (TFLOP/s and share of the ceiling beside their timing, compile time,
    the host's share) are not compared: one value per side is no measurement of a change. Metrics in
    seconds with several values (kernel time's samples; compile and CPU time, one value per A/B round)
    are timings; bytes, counts and error values have rules of their own (tewatch.detect.memory, drift,
    kernels)."""
    return info.kind != "metric" or (info.unit == "seconds" and np.size(head.samples) > 1)


HOST_BOUND_KERNEL_SHARE = 0.5


def _host_bound_cases(infos: dict[int, SeriesInfo], rows) -> dict[int, bool]:
    """Case id -> whether its calls are host-bound: kernels under half of its event time (cases with
    kernel time only; the others are judged by their duration)."""
    medians: dict[int, dict[str, float]] = defaultdict(dict)
    for series_id, samples, value, _ in rows:
        info = infos[series_id]
        values = [v for v in (samples or ([value] if value is not None else [])) if v and v > 0]
        if info.case_id is not None and values and info.unit == "seconds":
            medians[info.case_id][info.benchmark.rpartition(".")[2]] = float(np.median(values))
    return {
        case_id: found[KERNEL_SECONDS] < HOST_BOUND_KERNEL_SHARE * found[TRACK_SECONDS]
        for case_id, found in medians.items()
        if KERNEL_SECONDS in found and TRACK_SECONDS in found
    }


def _reconciled(
    compared: list[tuple[int, SeriesInfo, Comparison]],
) -> list[tuple[int, SeriesInfo, Comparison]]:
    """Each case's kernel-time comparison read against its event time's (detect.kernel_against_event)."""
    events = {
        info.case_id: comparison
        for _, info, comparison in compared
        if info.benchmark.endswith(f".{TRACK_SECONDS}") and info.case_id is not None
    }
    return [
        (
            series_id,
            info,
            kernel_against_event(comparison, events[info.case_id])
            if info.benchmark.endswith(f".{KERNEL_SECONDS}") and info.case_id in events
            else comparison,
        )
        for series_id, info, comparison in compared
    ]


def _primary_series(comparisons: list[tuple[int, SeriesInfo, Comparison]]) -> set[int]:
    """For each case, the timing series with the smallest run-to-run noise: the one that says `unchanged`."""
    best: dict[int, tuple[float, int]] = {}
    for series_id, info, comparison in comparisons:
        if info.unit != "seconds" or info.case_id is None or not np.isfinite(comparison.between_run_sigma):
            continue
        if info.benchmark.rsplit(".", 1)[-1] in NOT_CALL_TIMES:
            continue
        candidate = (comparison.between_run_sigma, series_id)
        if info.case_id not in best or candidate < best[info.case_id]:
            best[info.case_id] = candidate
    return {series_id for _, series_id in best.values()}


@dataclass
class PrComparisonPlan:
    """A pull request's comparisons against its merge base and its report, computed; nothing stored yet."""

    run_id: int
    pr_number: int
    branch: str | None
    base_run_ids: list[int]
    compared: list[tuple[int, SeriesInfo, Comparison]]
    primary: set[int]
    report: PrReport
    config: CompareConfig


def machine_siblings(session: Session, head_series: list[int], base_series: list[int]) -> dict[int, int]:
    """Base series -> the head series of the same benchmark and machine group (the case on another machine
    of its GPU model), for the base series that are not head series themselves."""
    head_ids = set(head_series)
    others = set(base_series) - head_ids
    if not others:
        return {}
    keys = series_group_keys(session, head_ids | others)
    head_by_key = {keys[s]: s for s in head_ids if s in keys}
    return {s: head_by_key[keys[s]] for s in others if keys.get(s) in head_by_key}


def compare_run_samples(
    session: Session, head_run_id: int, base_run_ids: list[int], config: CompareConfig, paired: bool = False
) -> tuple[list[tuple[int, SeriesInfo, Comparison]], list[Comparison]]:
    """Every compared series of a head run against base runs (a PR against its merge base, a release
    against the one before): (series id, what it is, comparison), reconciled; and the sweep's own list."""
    head_rows = session.execute(
        select(Result.series_id, Result.samples, Result.value, Result.round_sizes).where(
            Result.run_id == head_run_id, Result.status == ResultStatus.ok
        )
    ).all()
    base_results: dict[int, list[tuple]] = defaultdict(list)
    if base_run_ids:
        query = (
            select(Result.series_id, Result.samples, Result.value, Result.round_sizes)
            .where(Result.run_id.in_(base_run_ids), Result.status == ResultStatus.ok)
            .order_by(Result.run_id)
        )
        base_rows = session.execute(query).all()
        # base runs of another machine of the GPU model measured the same cases in series of their own
        same_series = machine_siblings(
            session, [r.series_id for r in head_rows], [r.series_id for r in base_rows]
        )
        for series_id, samples, value, round_sizes in base_rows:
            base_results[same_series.get(series_id, series_id)].append((samples, value, round_sizes))
    infos = series_infos(session, [r.series_id for r in head_rows])
    sigmas = between_run_sigmas(session, list(infos))
    host_bound = _host_bound_cases(infos, head_rows)
    pairs, keys = [], []
    for series_id, samples, value, round_sizes in head_rows:
        info = infos[series_id]
        head = _sides([(samples, value, round_sizes)])
        if not _compared(info, head):
            continue
        base = _sides(base_results.get(series_id, []))
        kernel = info.benchmark.endswith(f".{KERNEL_SECONDS}")
        case_host_bound = host_bound.get(info.case_id) if info.case_id is not None else None
        pairs.append(
            ComparePair(
                base,
                head,
                info.higher_is_better,
                sigmas.get(series_id),
                info.benchmark,
                group=info.backend or None,
                paired=paired,
                seconds=info.unit == "seconds",
                host_bound=False if kernel else case_host_bound,
            )
        )
        keys.append(series_id)
    results = compare_sweep(pairs, config)
    compared = _reconciled(
        [
            (series_id, infos[series_id], comparison)
            for series_id, comparison in zip(keys, results, strict=True)
        ]
    )
    return compared, results


def plan_pr_comparison(
    session: Session,
    run: Run,
    correctness: list[CaseFailure],
    public_url: str,
    config: CompareConfig,
    fixed: list[FixedCase] | None = None,
) -> PrComparisonPlan:
    """The PR's timing comparisons against its merge base and its `pr.report`, read and computed only;
    `fixed` (from `fixed_cases`) are the cases it makes pass again, computed here when not given."""
    pr_number = run.pr_number
    if pr_number is None:
        raise ValueError(f"run {run.id} is not a pull request's")
    base_runs = merge_base_runs(session, run)
    same_session = [r for r in base_runs if run.ab_session and r.ab_session == run.ab_session]
    paired = bool(same_session)
    if paired:  # the head's own A/B session: its rounds pair with these alone
        base_runs = same_session
    compared, results = compare_run_samples(session, run.id, [r.id for r in base_runs], config, paired)
    primary = _primary_series(compared)
    series = [
        SeriesFinding.of(series_id, info, c.verdict.value, c, series_id in primary)
        for series_id, info, c in compared
    ]
    rounds = max((c.rounds or 0 for c in results), default=0) or None
    inputs = report_inputs(session, run, base_runs, public_url, correctness, fixed)
    report = build_pr_report(inputs, series, rounds, config, DETECTOR_VERSION, public_url)
    return PrComparisonPlan(
        run.id, pr_number, run.branch, [r.id for r in base_runs], compared, primary, report, config
    )


def pr_report_event(report: PrReport) -> dict:
    """The `pr.report` payload: the report and its Markdown."""
    return PrReportPayload.of(report, render_pr_report(report)).model_dump(mode="json")


def store_pr_comparison(session: Session, plan: PrComparisonPlan, summary: DetectSummary) -> PrReport:
    """Write a planned comparison: a row per series, an alert per regression, the `pr.report` event."""
    config = plan.config
    # detecting a run again (POST /api/v1/detect) rewrites its comparisons, and its alerts keep pointing at them
    earlier = {
        row.series_key: row
        for row in session.scalars(
            select(PrComparison).where(
                PrComparison.head_run_id == plan.run_id, PrComparison.detector_version == DETECTOR_VERSION
            )
        )
    }
    for series_id, info, comparison in plan.compared:
        fields = {
            "pr_number": plan.pr_number,
            "head_run_id": plan.run_id,
            "base_run_ids": plan.base_run_ids,
            "series_id": series_id,
            "series_key": info.key,
            "verdict": comparison.verdict.value,
            "baseline": nan_to_none(comparison.baseline),
            "head": nan_to_none(comparison.head),
            "effect": nan_to_none(comparison.effect),
            "ci_low": nan_to_none(comparison.ci_low),
            "ci_high": nan_to_none(comparison.ci_high),
            "p_value": nan_to_none(comparison.p_value),
            "q_value": nan_to_none(comparison.q_value),
            "n_base": comparison.n_base,
            "n_head": comparison.n_head,
            "between_run_sigma": nan_to_none(comparison.between_run_sigma),
            "noise_source": comparison.noise_source.value,
            "rounds": comparison.rounds,
            "modes": comparison.modes or None,
            "primary": series_id in plan.primary,
            "min_effect": comparison.min_effect,
            "detector_version": DETECTOR_VERSION,
            "config": config.as_dict(),
        }
        row = earlier.get(info.key) or PrComparison()
        for name, value in fields.items():
            setattr(row, name, value)
        session.add(row)
        summary.comparisons[comparison.verdict.value] = (
            summary.comparisons.get(comparison.verdict.value, 0) + 1
        )
        if comparison.verdict is CompareVerdict.regression:
            session.flush()
            open_alert(
                session,
                f"pr-regression:{plan.pr_number}:{info.key}:{plan.run_id}",
                AlertKind.regression,
                f"PR #{plan.pr_number}: {info.label}{measured_on(info.gpu_model, machine_of(session, plan.run_id))}: "
                f"{comparison.effect * 100:+.1f} %",
                series_id=series_id,
                case_id=info.case_id,
                comparison_id=row.id,
                run_id=plan.run_id,
                pr_number=plan.pr_number,
                branch=plan.branch,
                gpu_model=info.gpu_model,
                effect=comparison.effect,
                details={"ci": [comparison.ci_low, comparison.ci_high], "q_value": comparison.q_value},
            )
    emit(session, EventType.pr_report, pr_report_event(plan.report))
    summary.events += 1
    return plan.report


def nan_to_none(value: float | None) -> float | None:
    return None if value is None or not np.isfinite(value) else float(value)

"""Detection against the store: change points on branches, correctness flips, pull requests against their
merge base. Each reads and computes outside any write transaction, then writes its detections, alerts and
webhook events in short ones (a batch of series or cases each), so uploads and acknowledgements wait for
a batch at most, never for a whole detection."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from sqlalchemy import Engine, func, select
from sqlalchemy.orm import Session

from tewatch.alerts.events import EventType, emit
from tewatch.alerts.lifecycle import change_status, open_alert
from tewatch.alerts.markdown import CorrectnessRow, FixedRow, PrReport, TimingRow, render_pr_report
from tewatch.core.statuses import FAILING_STATUSES
from tewatch.detect.changepoint import ChangePoint, clip_outliers, detect_change_points, robust_sigma
from tewatch.detect.compare import (
    ComparePair,
    CompareVerdict,
    Comparison,
    Side,
    compare_sweep,
    kernel_against_event,
)
from tewatch.detect.config import ChangePointConfig, CompareConfig
from tewatch.detect.direction import Direction, direction_of
from tewatch.detect.environment import environment_shift
from tewatch.detect.version import DETECTOR_VERSION
from tewatch.ingest.plan import UNKNOWN_GPU
from tewatch.pipeline.history import (
    History,
    SeriesInfo,
    branch_histories,
    latest_values,
    series_infos,
)
from tewatch.pipeline.withdrawal import withdraw
from tewatch.store.alert_models import Alert, AlertKind, AlertStatus, Detection, PrComparison
from tewatch.store.database import write_session
from tewatch.store.models import (
    Case,
    Commit,
    Machine,
    Result,
    ResultStatus,
    Run,
    Verdict,
    VerdictStatus,
)
from tewatch.store.run_reads import run_verdicts, verdicts_in_runs
from tewatch.store.table_rows import CaseFacts, VerdictFacts

FAILING = frozenset(VerdictStatus(s) for s in FAILING_STATUSES)
HISTORY_FOR_NOISE = 60
WRITE_BATCH = 200  # series (or cases) stored per write transaction
STALE_ATTEMPTS = 3


@dataclass
class DetectSummary:
    series: int = 0
    change_points: int = 0
    new_regressions: int = 0
    new_improvements: int = 0
    environment_shifts: int = 0
    withdrawn: int = 0
    correctness_alerts: int = 0
    resolved_alerts: int = 0
    comparisons: dict[str, int] = field(default_factory=dict)
    events: int = 0


# change points on a branch ------------------------------------------------------------------------------
def _links(public_url: str, info: SeriesInfo) -> dict[str, str]:
    base = public_url.rstrip("/")
    links = {"alerts": f"{base}/alerts"}
    if info.series_id is not None:
        links["series"] = f"{base}/series/{info.series_id}"
    return links


def measured_on(gpu_model: str, machine: str | None) -> str:
    """Where an alert's title says it was measured: " on <GPU>", the machine's name where the GPU is
    unknown (asv results of CPU benchmarks name none), nothing where neither is known."""
    if gpu_model and gpu_model != UNKNOWN_GPU:
        return f" on {gpu_model}"
    return f" on {machine}" if machine else ""


def _machine_of(session: Session, run_id: int) -> str | None:
    return session.scalar(
        select(Machine.name).join(Run, Run.machine_id == Machine.id).where(Run.id == run_id)
    )


def _record_change_point(
    session: Session,
    history: History,
    cp: ChangePoint,
    branch: str,
    config: ChangePointConfig,
    public_url: str,
    summary: DetectSummary,
    existing: list[Detection],
) -> None:
    info, points = history.info, history.points
    direction = direction_of(cp.effect, info.higher_is_better)
    shift = environment_shift(
        [p.environment for p in points], cp.first_possible_index, cp.last_possible_index
    )
    position = {p.commit_id: i for i, p in enumerate(points)}
    fields = {
        "series_id": info.series_id,
        "series_key": info.key,
        "branch": branch,
        "gpu_model": info.gpu_model,
        "run_id": points[cp.index].run_id,
        "commit_id": points[cp.index].commit_id,
        "before_commit_id": points[cp.before_index].commit_id,
        "first_possible_commit_id": points[cp.first_possible_index].commit_id,
        "direction": direction.value,
        "baseline": cp.baseline,
        "level_after": cp.level_after,
        "lower_limit": cp.lower_limit,
        "upper_limit": cp.upper_limit,
        "effect": cp.effect,
        "z": cp.z,
        "sigma": cp.sigma,
        "n_before": cp.n_before,
        "n_after": cp.n_after,
        "environment_shift": shift is not None,
        "environment_changes": shift[1] if shift else {},
        "detector_version": DETECTOR_VERSION,
        "config": config.as_dict(),
        "active": True,
    }
    slack = config.persistence
    for stored in existing:
        at = position.get(stored.commit_id)
        if (
            stored.direction == direction.value
            and at is not None
            and cp.first_possible_index - slack <= at <= cp.last_possible_index + slack
        ):
            for name, value in fields.items():
                setattr(stored, name, value)
            existing.remove(stored)
            return
    detection = Detection(**fields)
    session.add(detection)
    session.flush()
    summary.change_points += 1
    summary.environment_shifts += shift is not None
    if direction is Direction.improvement:
        summary.new_improvements += 1
        return
    summary.new_regressions += 1
    sha_range = f"{points[cp.first_possible_index].sha[:10]}..{points[cp.last_possible_index].sha[:10]}"
    prefix = "[environment] " if shift else ""
    alert, created = open_alert(
        session,
        f"regression:{info.key}:{branch}:{detection.id}",
        AlertKind.regression,
        f"{prefix}{info.label}{measured_on(info.gpu_model, _machine_of(session, points[cp.index].run_id))}: "
        f"{cp.effect * 100:+.1f} % since {sha_range}",
        series_id=info.series_id,
        case_id=info.case_id,
        detection_id=detection.id,
        run_id=points[cp.index].run_id,
        branch=branch,
        gpu_model=info.gpu_model,
        effect=cp.effect,
        details={"environment_changes": fields["environment_changes"], "commit_range": sha_range},
    )
    if created:
        payload = {
            "alert_id": alert.id,
            "detection_id": detection.id,
            "branch": branch,
            "series": info.label,
            "series_key": info.key,
            "series_id": info.series_id,
            "gpu_model": info.gpu_model,
            "unit": info.unit,
            "higher_is_better": info.higher_is_better,
            "commit": points[cp.index].sha,
            "last_commit_before": points[cp.before_index].sha,
            "first_possible_commit": points[cp.first_possible_index].sha,
            "baseline": cp.baseline,
            "level_after": cp.level_after,
            "effect": cp.effect,
            "lower_limit": cp.lower_limit,
            "upper_limit": cp.upper_limit,
            "z": cp.z,
            "environment_shift": shift is not None,
            "environment_changes": fields["environment_changes"],
            "detector_version": DETECTOR_VERSION,
            "links": _links(public_url, info),
        }
        emit(session, EventType.regression_detected, payload)
        summary.events += 1


@dataclass(frozen=True)
class _Found:
    history: History
    change_points: list[ChangePoint]


class _Stale(Exception):
    """A run landed on the branch after its histories were read."""


def _branch_state(session: Session, branch: str) -> tuple[int, int | None]:
    """Changes whenever a run lands on the branch (runs are never deleted)."""
    count, newest = session.execute(
        select(func.count(Run.id), func.max(Run.id)).where(Run.branch == branch, Run.pr_number.is_(None))
    ).one()
    return count, newest


def _stored_detections(session: Session, branch: str, keys: list[str]) -> dict[str, list[Detection]]:
    stored: dict[str, list[Detection]] = defaultdict(list)
    for start in range(0, len(keys), 500):
        query = select(Detection).where(
            Detection.branch == branch,
            Detection.active.is_(True),
            Detection.series_key.in_(keys[start : start + 500]),
        )
        for detection in session.scalars(query):
            stored[detection.series_key].append(detection)
    return stored


def _store_change_points(
    engine: Engine,
    found: list[_Found],
    branch: str,
    config: ChangePointConfig,
    public_url: str,
    summary: DetectSummary,
    state: tuple[int, int | None] | None,
) -> None:
    """Store what the histories showed, WRITE_BATCH series per transaction. With `state`, raises _Stale
    before a batch once the branch has moved on from it (batches already stored stay: storing is
    idempotent, the next pass updates them)."""
    for start in range(0, len(found), WRITE_BATCH):
        batch = found[start : start + WRITE_BATCH]
        with write_session(engine) as session:
            if state is not None and _branch_state(session, branch) != state:
                raise _Stale
            stored = _stored_detections(session, branch, [f.history.info.key for f in batch])
            for item in batch:
                commits = {p.commit_id for p in item.history.points}
                existing = stored.get(item.history.info.key, [])
                for cp in item.change_points:
                    _record_change_point(
                        session, item.history, cp, branch, config, public_url, summary, existing
                    )
                for gone in existing:
                    if gone.commit_id in commits:  # later history no longer supports it
                        withdraw(
                            session, gone, summary, item.history.points[-1].sha if item.history.points else ""
                        )
    summary.series += len(found)


def detect_on_branch(
    engine: Engine,
    branch: str,
    public_url: str,
    config: ChangePointConfig,
    summary: DetectSummary,
    series_ids: list[int] | None = None,
    progress_total: Callable[[int], None] | None = None,
    progress: Callable[[int], None] | None = None,
) -> None:
    for attempt in range(STALE_ATTEMPTS):
        with Session(engine) as session:
            state = _branch_state(session, branch)
            histories = branch_histories(session, branch, series_ids)
        if progress_total and attempt == 0:
            progress_total(len(histories))
        found = []
        for history in histories:
            found.append(_Found(history, detect_change_points(history.values, config)))
            if progress and attempt == 0:
                progress(1)
        last = attempt == STALE_ATTEMPTS - 1
        try:
            _store_change_points(engine, found, branch, config, public_url, summary, None if last else state)
            return
        except _Stale:
            continue


def detect_branch(
    engine: Engine,
    branch: str,
    public_url: str,
    config: ChangePointConfig | None = None,
    series_ids: list[int] | None = None,
    progress_total: Callable[[int], None] | None = None,
    progress: Callable[[int], None] | None = None,
) -> DetectSummary:
    """Change points in every series of a branch (or of `series_ids`). Histories are read and change
    points computed outside any write transaction; only storing them holds the write lock, a batch at a
    time. When a run lands on the branch meanwhile, the pass starts again from the newer history (the
    last of STALE_ATTEMPTS passes stores regardless)."""
    summary = DetectSummary()
    detect_on_branch(
        engine,
        branch,
        public_url,
        config or ChangePointConfig(),
        summary,
        series_ids,
        progress_total,
        progress,
    )
    return summary


# correctness -------------------------------------------------------------------------------------------
def _case_label(case: Case | CaseFacts) -> str:
    params = ", ".join(f"{k}={v}" for k, v in sorted((case.params or {}).items()))
    return f"{case.case_name}({params})"


def _verdict_detail(verdict: Verdict | VerdictFacts) -> str:
    if verdict.status == VerdictStatus.fail_accuracy:
        return f"{verdict.check}: {verdict.metric} = {verdict.metric_value} > tolerance {verdict.tolerance}"
    text = (
        f"{verdict.exception_class}: {verdict.message}"
        if verdict.exception_class
        else (verdict.message or "")
    )
    return f"{verdict.check}: {text}".strip(": ")


def is_new_failure(status: VerdictStatus, previous: VerdictStatus | None) -> bool:
    """A correctness regression: the case fails now and passed (or did not exist) before."""
    return status in FAILING and previous in (None, VerdictStatus.passed)


def previous_verdicts(session: Session, run: Run) -> dict[int, VerdictStatus]:
    """The verdict each case had before this run: the merge base for a pull request, else the latest
    earlier run on the same branch."""
    if run.pr_number is not None:
        base_runs = merge_base_runs(session, run)
        query = select(Verdict.case_id, Verdict.status).where(Verdict.run_id.in_([r.id for r in base_runs]))
        return {case_id: status for case_id, status in session.execute(query)}  # noqa: C416 - dict() reads a Result, which has keys(), as a mapping
    query = (
        select(Verdict.case_id, Verdict.status, Run.id)
        .join(Run, Verdict.run_id == Run.id)
        .join(Commit, Run.commit_id == Commit.id)
        .where(
            Run.branch == run.branch,
            Run.pr_number.is_(None),
            Run.id != run.id,
            Verdict.case_id.in_(select(Verdict.case_id).where(Verdict.run_id == run.id)),
        )
        .order_by(Commit.committed_at, Run.started_at, Run.id)
    )
    this_commit = session.get(Commit, run.commit_id)
    latest: dict[int, VerdictStatus] = {}
    for case_id, status, other_id in session.execute(query):
        other = session.get(Run, other_id)
        if (
            this_commit.committed_at
            and other.commit.committed_at
            and other.commit.committed_at > this_commit.committed_at
        ):
            continue
        latest[case_id] = status
    return latest


@dataclass(frozen=True)
class _NewFailure:
    row: CorrectnessRow
    dedupe_key: str
    title: str
    alert_fields: dict
    event: dict  # the correctness.failed payload but its alert id


@dataclass
class CorrectnessChanges:
    """What a run's verdicts change, read from the store: its new failures, and (on a branch) the cases
    that pass again, whose open correctness alerts it resolves."""

    run_id: int
    branch: str | None
    sha: str
    failures: list[_NewFailure]
    passing_case_ids: list[int]

    @property
    def rows(self) -> list[CorrectnessRow]:
        return [f.row for f in self.failures]


def correctness_changes(
    session: Session, run: Run, public_url: str, before: dict[int, VerdictStatus] | None = None
) -> CorrectnessChanges:
    """`before`: each case's verdict at the run before (default: read from the store)."""
    before = previous_verdicts(session, run) if before is None else before
    scope = f"pr{run.pr_number}" if run.pr_number is not None else f"branch:{run.branch}"
    failures, passing = [], []
    query = select(Verdict, Case).join(Case, Verdict.case_id == Case.id).where(Verdict.run_id == run.id)
    for verdict, case in session.execute(query).all():
        previous = before.get(case.id)
        if is_new_failure(verdict.status, previous):
            detail = _verdict_detail(verdict)
            failures.append(
                _NewFailure(
                    row=CorrectnessRow(
                        _case_label(case),
                        previous.value if previous else "",
                        verdict.status.value,
                        detail,
                        case.id,
                    ),
                    dedupe_key=f"correctness:{case.fingerprint}:{scope}:{run.id}",
                    title=f"{_case_label(case)}{measured_on(case.gpu_model, run.machine.name)}: {verdict.status.value}",
                    alert_fields={
                        "case_id": case.id,
                        "verdict_id": verdict.id,
                        "run_id": run.id,
                        "branch": run.branch,
                        "pr_number": run.pr_number,
                        "gpu_model": case.gpu_model,
                        "details": {
                            "previous": previous.value if previous else None,
                            "status": verdict.status.value,
                            "detail": detail,
                        },
                    },
                    event={
                        "case": _case_label(case),
                        "case_id": case.id,
                        "gpu_model": case.gpu_model,
                        "branch": run.branch,
                        "pr_number": run.pr_number,
                        "commit": run.commit.sha,
                        "previous": previous.value if previous else None,
                        "status": verdict.status.value,
                        "check": verdict.check,
                        "exception_class": verdict.exception_class,
                        "message": verdict.message,
                        "metric": verdict.metric,
                        "value": verdict.metric_value,
                        "tolerance": verdict.tolerance,
                        "links": {"alerts": f"{public_url.rstrip('/')}/alerts"},
                    },
                )
            )
        elif verdict.status == VerdictStatus.passed and run.pr_number is None:
            passing.append(case.id)
    return CorrectnessChanges(run.id, run.branch, run.commit.sha, failures, passing)


def store_correctness(engine: Engine, changes: CorrectnessChanges, summary: DetectSummary) -> None:
    """Open an alert (and queue a correctness.failed event) per new failure and resolve the alerts of
    cases passing again, WRITE_BATCH at a time; alerts are keyed by run, so storing twice adds nothing."""
    for start in range(0, len(changes.failures), WRITE_BATCH):
        with write_session(engine) as session:
            for failure in changes.failures[start : start + WRITE_BATCH]:
                alert, created = open_alert(
                    session, failure.dedupe_key, AlertKind.correctness, failure.title, **failure.alert_fields
                )
                if created:
                    summary.correctness_alerts += 1
                    emit(session, EventType.correctness_failed, {"alert_id": alert.id, **failure.event})
                    summary.events += 1
    for start in range(0, len(changes.passing_case_ids), WRITE_BATCH):
        with write_session(engine) as session:
            open_ones = session.scalars(
                select(Alert).where(
                    Alert.kind == AlertKind.correctness,
                    Alert.case_id.in_(changes.passing_case_ids[start : start + WRITE_BATCH]),
                    Alert.branch == changes.branch,
                    Alert.pr_number.is_(None),
                    Alert.status.in_([AlertStatus.open, AlertStatus.acknowledged]),
                )
            )
            for alert in open_ones:
                change_status(
                    session,
                    alert,
                    AlertStatus.resolved,
                    "detector",
                    f"passes again in run {changes.run_id} at commit {changes.sha}",
                )
                alert.details = {
                    **(alert.details or {}),
                    "fixed_by_commit": changes.sha,
                    "fixed_by_run": changes.run_id,
                }
                summary.resolved_alerts += 1


@dataclass(frozen=True)
class FixedCase:
    """A case a pull request fixes: failing on the merge base (`base`, the verdict `previous_verdicts` saw
    there), passing in the pull request's run (`verdict`)."""

    case: CaseFacts
    verdict: VerdictFacts
    base: VerdictFacts


def fixed_cases(
    session: Session, run: Run, before: dict[int, VerdictStatus] | None = None
) -> list[FixedCase]:
    """The cases a pull-request run fixes: their verdict on the merge base's runs fails (FAILING) and
    their verdict in this run is `pass`; ordered by case. Empty for a run that is not a pull request's."""
    if run.pr_number is None:
        return []
    before = previous_verdicts(session, run) if before is None else before
    conn = session.connection()
    candidates = {
        found.case.id: found
        for found in run_verdicts(conn, run.id, [VerdictStatus.passed])
        if before.get(found.case.id) in FAILING
    }
    if not candidates:
        return []
    base_ids = [r.id for r in merge_base_runs(session, run)]
    base = {  # the failure previous_verdicts saw, the latest run's
        verdict.case_id: verdict
        for verdict in verdicts_in_runs(conn, base_ids, sorted(candidates))
        if verdict.status == before[verdict.case_id]
    }
    fixed = [
        FixedCase(found.case, found.verdict, base[case_id])
        for case_id, found in candidates.items()
        if case_id in base
    ]
    return sorted(fixed, key=lambda f: (_case_label(f.case), f.case.gpu_model, f.case.id))


def _base_alerts(session: Session, base_runs: list[Run], case_ids: list[int]) -> dict[int, list[int]]:
    """Correctness alerts still open (or acknowledged) on the merge base's branches, by case."""
    branches = sorted({r.branch for r in base_runs if r.branch})
    out: dict[int, list[int]] = defaultdict(list)
    if not branches or not case_ids:
        return out
    for start in range(0, len(case_ids), 500):
        query = (
            select(Alert.case_id, Alert.id)
            .where(
                Alert.kind == AlertKind.correctness,
                Alert.case_id.in_(case_ids[start : start + 500]),
                Alert.branch.in_(branches),
                Alert.pr_number.is_(None),
                Alert.status.in_([AlertStatus.open, AlertStatus.acknowledged]),
            )
            .order_by(Alert.id)
        )
        for case_id, alert_id in session.execute(query):
            out[case_id].append(alert_id)
    return out


def fixed_payload(
    session: Session, base_runs: list[Run], fixed: list[FixedCase], public_url: str
) -> list[dict]:
    """The `fixed` list of the `pr.report` payload: each fixed case with what it failed with on the merge
    base, and the correctness alerts still open for it there (merging the fix resolves them)."""
    base_url = public_url.rstrip("/")
    alerts = _base_alerts(session, base_runs, [f.case.id for f in fixed])
    return [
        {
            "case": _case_label(f.case),
            "case_id": f.case.id,
            "gpu_model": f.case.gpu_model,
            "previous": f.base.status.value,
            "previous_detail": _verdict_detail(f.base),
            "check": f.base.check,
            "exception_class": f.base.exception_class,
            "message": f.base.message,
            "metric": f.base.metric,
            "value": f.base.metric_value,
            "tolerance": f.base.tolerance,
            "base_run_id": f.base.run_id,
            "status": f.verdict.status.value,
            "open_alert_ids": alerts.get(f.case.id, []),
            "links": {"case": f"{base_url}/case/{f.case.id}"},
        }
        for f in fixed
    ]


# pull requests ---------------------------------------------------------------------------------------------
def merge_base_runs(session: Session, run: Run) -> list[Run]:
    """The merge base's runs on the head run's machine where it has any, else on the same GPU model: another
    host moves host-bound cases by tens of percent (an H200 contract check, 26 us on one, 14 us on another)."""
    if not run.merge_base_sha:
        return []
    query = (
        select(Run)
        .join(Commit, Run.commit_id == Commit.id)
        .join(Machine, Run.machine_id == Machine.id)
        .where(
            Commit.sha.startswith(run.merge_base_sha[:40]),
            Run.pr_number.is_(None),
            Machine.gpu_model == run.machine.gpu_model,
        )
    )
    runs = list(session.scalars(query))
    same_machine = [r for r in runs if r.machine_id == run.machine_id]
    return same_machine or runs


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
    the host's share) are not compared: one value per side is no measurement of a change."""
    return info.kind != "metric" or len(head.samples) > 1


KERNEL_METRIC = "kernel_seconds"
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
        case_id: found[KERNEL_METRIC] < HOST_BOUND_KERNEL_SHARE * found["track_seconds"]
        for case_id, found in medians.items()
        if KERNEL_METRIC in found and "track_seconds" in found
    }


def _reconciled(
    compared: list[tuple[int, SeriesInfo, Comparison]],
) -> list[tuple[int, SeriesInfo, Comparison]]:
    """Each case's kernel-time comparison read against its event time's (detect.kernel_against_event)."""
    events = {
        info.case_id: comparison
        for _, info, comparison in compared
        if info.benchmark.endswith(".track_seconds") and info.case_id is not None
    }
    return [
        (
            series_id,
            info,
            kernel_against_event(comparison, events[info.case_id])
            if info.benchmark.endswith(f".{KERNEL_METRIC}") and info.case_id in events
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
        candidate = (comparison.between_run_sigma, series_id)
        if info.case_id not in best or candidate < best[info.case_id]:
            best[info.case_id] = candidate
    return {series_id for _, series_id in best.values()}


def case_verdicts(comparisons: list[tuple[int, SeriesInfo, Comparison]], primary: set[int]) -> dict[int, str]:
    """Case id -> its verdict: a regression (improvement) when any of its series is one, else its primary
    series' verdict (unchanged, unstable or inconclusive)."""
    by_case: dict[int, list[tuple[bool, CompareVerdict]]] = defaultdict(list)
    for series_id, info, comparison in comparisons:
        if info.case_id is not None:
            by_case[info.case_id].append((series_id in primary, comparison.verdict))
    verdicts = {}
    for case_id, rows in by_case.items():
        seen = {v for _, v in rows}
        if CompareVerdict.regression in seen:
            verdicts[case_id] = CompareVerdict.regression.value
        elif CompareVerdict.improvement in seen:
            verdicts[case_id] = CompareVerdict.improvement.value
        else:
            main = [v for is_primary, v in rows if is_primary] or [v for _, v in rows]
            verdicts[case_id] = main[0].value
    return verdicts


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
    event: dict
    config: CompareConfig


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
        for series_id, samples, value, round_sizes in session.execute(query):
            base_results[series_id].append((samples, value, round_sizes))
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
        kernel = info.benchmark.endswith(f".{KERNEL_METRIC}")
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
                host_bound=False if kernel else host_bound.get(info.case_id),
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
    correctness: list[CorrectnessRow],
    public_url: str,
    config: CompareConfig,
    fixed: list[FixedCase] | None = None,
) -> PrComparisonPlan:
    """The PR's timing comparisons against its merge base and its `pr.report`, read and computed only;
    `fixed` (from `fixed_cases`) are the cases it makes pass again, computed here when not given."""
    fixed = fixed_cases(session, run) if fixed is None else fixed
    base_runs = merge_base_runs(session, run)
    same_session = [r for r in base_runs if run.ab_session and r.ab_session == run.ab_session]
    paired = bool(same_session)
    if paired:  # the head's own A/B session: its rounds pair with these alone
        base_runs = same_session
    compared, results = compare_run_samples(session, run.id, [r.id for r in base_runs], config, paired)
    primary = _primary_series(compared)
    by_case = case_verdicts(compared, primary)
    rounds = max((c.rounds or 0 for c in results), default=0) or None
    report = PrReport(
        pr_number=run.pr_number,
        head_sha=run.commit.sha,
        base_sha=run.merge_base_sha or "",
        gpu_model=run.machine.gpu_model,
        public_url=public_url,
        correctness=correctness,
        fixed=[
            FixedRow(_case_label(f.case), f.base.status.value, _verdict_detail(f.base), f.case.id)
            for f in fixed
        ],
        min_effect=config.min_effect,
        alpha=config.alpha,
        detector_version=DETECTOR_VERSION,
        case_counts=dict(Counter(by_case.values())),
        rounds=rounds,
    )
    for series_id, info, comparison in compared:
        report.counts[comparison.verdict.value] = report.counts.get(comparison.verdict.value, 0) + 1
        if comparison.verdict in (CompareVerdict.regression, CompareVerdict.improvement):
            timing = TimingRow(
                info.label,
                info.unit,
                comparison.baseline,
                comparison.head,
                comparison.effect,
                comparison.ci_low,
                comparison.ci_high,
                series_id,
            )
            target = (
                report.regressions if comparison.verdict is CompareVerdict.regression else report.improvements
            )
            target.append(timing)
    report.regressions.sort(key=lambda r: -abs(r.effect))
    report.improvements.sort(key=lambda r: -abs(r.effect))
    event = {
        "pr_number": run.pr_number,
        "repo": run.commit.repo,
        "head_sha": run.commit.sha,
        "base_sha": run.merge_base_sha,
        "gpu_model": run.machine.gpu_model,
        "run_id": run.id,
        "base_run_ids": [r.id for r in base_runs],
        "counts": report.counts,
        "case_counts": report.case_counts,
        "rounds": rounds,
        "correctness_failures": len(correctness),
        "markdown": render_pr_report(report),
        "detector_version": DETECTOR_VERSION,
        "links": {
            "pr": f"{public_url.rstrip('/')}/pr/{run.pr_number}",
            "alerts": f"{public_url.rstrip('/')}/alerts",
        },
        "fixed": fixed_payload(session, base_runs, fixed, public_url),
    }
    return PrComparisonPlan(
        run.id, run.pr_number, run.branch, [r.id for r in base_runs], compared, primary, report, event, config
    )


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
                f"PR #{plan.pr_number}: {info.label}{measured_on(info.gpu_model, _machine_of(session, plan.run_id))}: "
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
    emit(session, EventType.pr_report, plan.event)
    summary.events += 1
    return plan.report


def nan_to_none(value: float | None) -> float | None:
    return None if value is None or not np.isfinite(value) else float(value)


# after an upload -------------------------------------------------------------------------------------------
def detect_after_upload(
    engine: Engine,
    run_id: int,
    public_url: str,
    change_config: ChangePointConfig | None = None,
    compare_config: CompareConfig | None = None,
) -> DetectSummary:
    """Correctness flips, then either the PR comparison or change points on the run's branch: each read
    and computed first, then stored in short write transactions."""
    summary = DetectSummary()
    plan: PrComparisonPlan | None = None
    series_ids: list[int] = []
    with Session(engine) as session:
        run = session.get(Run, run_id)
        if run is None:
            raise LookupError(f"no run {run_id}")
        branch = run.branch
        changes = correctness_changes(session, run, public_url)
        if run.pr_number is not None:
            plan = plan_pr_comparison(
                session, run, changes.rows, public_url, compare_config or CompareConfig()
            )
        elif branch:
            series_ids = list(session.scalars(select(Result.series_id).where(Result.run_id == run.id)))
    store_correctness(engine, changes, summary)
    if plan is not None:
        with write_session(engine) as session:
            store_pr_comparison(session, plan, summary)
    elif branch:
        detect_on_branch(
            engine, branch, public_url, change_config or ChangePointConfig(), summary, series_ids
        )
    return summary

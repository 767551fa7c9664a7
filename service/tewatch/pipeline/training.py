"""Training cases of a run judged by tewatch.detect.trajectory: each case's loss trajectory against its
reference in the same run (bf16 eager for a recipe, eager of the same recipe for compiled or graphed) and,
in a pull request, against the same case on the merge base. Reads the store, calls the rules; the report's
Training section and the correctness alerts on a branch are written from what it returns."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from tewatch.alerts.events import EventType, emit
from tewatch.alerts.lifecycle import change_status, open_alert
from tewatch.detect.trajectory import (
    Band,
    Pairing,
    TrajectoryComparison,
    TrajectoryVerdict,
    compare_trajectories,
    learn_band,
)
from tewatch.findings.pr_report import TrainingCase
from tewatch.pipeline.labels import case_label, measured_on
from tewatch.pipeline.merge_base import merge_base_runs
from tewatch.pipeline.summary import DetectSummary
from tewatch.store.engine.database import write_session
from tewatch.store.reads.table_rows import TrajectoryFacts
from tewatch.store.reads.trajectory_reads import (
    case_trajectories,
    latest_trajectory_run,
    trajectories_in_runs,
)
from tewatch.store.schema.alert_models import Alert, AlertKind, AlertStatus
from tewatch.store.schema.models import Benchmark, Case, Result, ResultStatus, Run, Series

BAND_RUNS = 20  # the newest runs of identical code a band is learned from
STEP_SECONDS, PEAK_BYTES = "step_seconds", "peak_allocated_bytes"
ALERT_PREFIX = "training:"  # the dedupe keys of divergence alerts


@dataclass(frozen=True)
class Judged:
    """One training case of a run: its trajectory and what it was compared against."""

    case: Case
    trajectory: TrajectoryFacts
    reference: str  # "bf16 eager", "eager", "" for none
    reference_case_id: int | None
    in_run: TrajectoryComparison | None
    band: Band
    against_base: TrajectoryComparison | None = None
    base_trajectory: TrajectoryFacts | None = None


def _label(case: Case, name: str) -> str:
    value = (case.labels or {}).get(name, (case.params or {}).get(name))
    return "" if value is None else str(value)


def _reference_of(case: Case, cases: dict[tuple[str, str, str], Case]) -> tuple[Pairing, str, Case] | None:
    """Eager of the same recipe for compiled or graphed; bf16 eager for another recipe's eager."""
    backend, recipe, execution = (_label(case, k) for k in ("backend", "recipe", "execution"))
    if execution != "eager":
        found = cases.get((backend, recipe, "eager"))
        return (Pairing.execution_vs_eager, "eager", found) if found else None
    if recipe != "bf16":
        found = cases.get((backend, "bf16", "eager"))
        return (Pairing.recipe_vs_bf16, "bf16 eager", found) if found else None
    return None


def identical_code_runs(session: Session, run: Run, include_run: bool) -> list[int]:
    """The newest runs before `run` outside pull requests on its machine in its environment (TE's version
    and commit, torch's), and `run` itself where `include_run`: runs of identical code, whose
    trajectories teach the band. A run under judgment is left out of its own band."""
    query = (
        select(Run.id)
        .where(
            Run.machine_id == run.machine_id,
            Run.environment_id == run.environment_id,
            Run.pr_number.is_(None),
            Run.id < run.id,
        )
        .order_by(Run.id.desc())
        .limit(BAND_RUNS)
    )
    return [*([run.id] if include_run else []), *session.scalars(query)]


def _band(session: Session, case_id: int, run_ids: Sequence[int]) -> Band:
    return learn_band([t.loss for t in case_trajectories(session.connection(), case_id, run_ids)])


def judge_run(session: Session, run: Run) -> list[Judged]:
    """Every training case of the run against its reference in the run."""
    trajectories = {t.case_id: t for t in trajectories_in_runs(session.connection(), [run.id])}
    if not trajectories:
        return []
    cases = {c.id: c for c in session.scalars(select(Case).where(Case.id.in_(list(trajectories))))}
    by_labels = {tuple(_label(c, k) for k in ("backend", "recipe", "execution")): c for c in cases.values()}
    same_code = identical_code_runs(session, run, include_run=False)
    bands = {case_id: _band(session, case_id, same_code) for case_id in trajectories}
    judged = []
    for case_id, trajectory in sorted(trajectories.items()):
        case = cases[case_id]
        reference = _reference_of(case, by_labels)  # type: ignore[arg-type]
        if reference is None:
            judged.append(Judged(case, trajectory, "", None, None, bands[case_id]))
            continue
        pairing, name, other = reference
        band = bands[case_id].widest(bands[other.id])
        found = compare_trajectories(pairing, trajectories[other.id].loss, trajectory.loss, band)
        judged.append(Judged(case, trajectory, name, other.id, found, band))
    return judged


def against_base(session: Session, judged: list[Judged], base_runs: Sequence[Run]) -> list[Judged]:
    """Each case against the same case on the newest merge-base run that trained it, within the band of
    the merge base's runs of identical code."""
    if not base_runs:
        return judged
    newest = sorted(base_runs, key=lambda r: r.id, reverse=True)
    by_case: dict[int, tuple[Run, TrajectoryFacts]] = {}
    for base_run in newest:
        for trajectory in trajectories_in_runs(session.connection(), [base_run.id]):
            by_case.setdefault(trajectory.case_id, (base_run, trajectory))
    out = []
    for found in judged:
        if found.case.id not in by_case:
            out.append(found)
            continue
        base_run, base = by_case[found.case.id]
        band = _band(session, found.case.id, identical_code_runs(session, base_run, include_run=True))
        comparison = compare_trajectories(Pairing.head_vs_base, base.loss, found.trajectory.loss, band)
        out.append(
            Judged(
                found.case,
                found.trajectory,
                found.reference,
                found.reference_case_id,
                found.in_run,
                found.band,
                comparison,
                base,
            )
        )
    return out


def _metrics(
    session: Session, run_ids: Sequence[int], case_ids: Sequence[int]
) -> dict[tuple[int, int, str], float]:
    """(run, case, metric) -> value of the step time and peak memory metrics."""
    if not run_ids or not case_ids:
        return {}
    query = (
        select(Result.run_id, Series.case_id, Benchmark.name, Result.value)
        .join(Series, Result.series_id == Series.id)
        .join(Benchmark, Series.benchmark_id == Benchmark.id)
        .where(
            Result.run_id.in_(list(run_ids)),
            Series.case_id.in_(list(case_ids)),
            Result.status == ResultStatus.ok,
        )
    )
    found = {}
    for run_id, case_id, name, value in session.execute(query):
        metric = name.rpartition(".")[2]
        if metric in (STEP_SECONDS, PEAK_BYTES) and value is not None:
            found[(run_id, case_id, metric)] = float(value)
    return found


def training_cases(session: Session, run: Run, base_runs: Sequence[Run]) -> list[TrainingCase]:
    """The report's Training section: a row per training case of the head run, diverged first."""
    judged = against_base(session, judge_run(session, run), base_runs)
    if not judged:
        return []
    case_ids = [j.case.id for j in judged]
    metrics = _metrics(session, [run.id, *(r.id for r in base_runs)], case_ids)
    rows = []
    for j in judged:
        base_run_id = j.base_trajectory.run_id if j.base_trajectory else None
        rows.append(
            TrainingCase(
                benchmark=case_label(j.case),
                case_id=j.case.id,
                run_id=run.id,
                recipe=_label(j.case, "recipe"),
                execution=_label(j.case, "execution"),
                step_seconds=metrics.get((run.id, j.case.id, STEP_SECONDS)),
                base_step_seconds=metrics.get((base_run_id, j.case.id, STEP_SECONDS))
                if base_run_id
                else None,
                peak_bytes=metrics.get((run.id, j.case.id, PEAK_BYTES)),
                reference=j.reference,
                verdict=j.in_run.verdict.value if j.in_run else "",
                first_divergent_step=j.in_run.first_divergent_step if j.in_run else None,
                description=j.in_run.describe(j.reference) if j.in_run else "",
                base_verdict=j.against_base.verdict.value if j.against_base else "",
                base_first_divergent_step=j.against_base.first_divergent_step if j.against_base else None,
                max_abs_difference=j.against_base.max_abs_difference if j.against_base else None,
                final_difference=j.against_base.final_difference if j.against_base else None,
                base_description=j.against_base.describe("the base") if j.against_base else "",
            )
        )
    return sorted(rows, key=lambda r: (not r.diverged, r.recipe, r.execution, r.benchmark))


@dataclass(frozen=True)
class Divergence:
    case_id: int
    case_fingerprint: str
    title: str
    details: dict


def branch_divergences(session: Session, run: Run) -> tuple[list[Divergence], list[int]]:
    """A run on a branch: (the training cases whose loss leaves the band of their reference, the training
    cases that stay within it)."""
    diverged, within = [], []
    for j in judge_run(session, run):
        if j.in_run is None or j.in_run.verdict is TrajectoryVerdict.incomparable:
            continue
        if j.in_run.verdict is not TrajectoryVerdict.diverged:
            within.append(j.case.id)
            continue
        where = measured_on(j.case.gpu_model, run.machine.name)
        title = f"{case_label(j.case)}{where}: loss parts from {j.reference} at step {j.in_run.first_divergent_step}"
        details = {
            "status": "diverged",
            "reference": j.reference,
            "reference_case_id": j.reference_case_id,
            "first_divergent_step": j.in_run.first_divergent_step,
            "detail": j.in_run.describe(j.reference),
        }
        diverged.append(Divergence(j.case.id, j.case.fingerprint, title, details))
    return diverged, within


def store_divergence_alerts(engine: Engine, run_id: int, public_url: str, summary: DetectSummary) -> None:
    """Open a correctness alert (and a correctness.failed event) per training case of a branch's run whose
    loss leaves its band, unless one is open for it on the branch; resolve those of cases back within."""
    with Session(engine) as session:
        run = session.get_one(Run, run_id)
        if run.pr_number is not None or not run.branch:
            return
        diverged, within = branch_divergences(session, run)
        branch, sha = run.branch, run.commit.sha
    if not diverged and not within:
        return
    with write_session(engine) as session:
        open_ones = {
            alert.case_id: alert
            for alert in session.scalars(
                select(Alert).where(
                    Alert.kind == AlertKind.correctness,
                    Alert.dedupe_key.startswith(ALERT_PREFIX),
                    Alert.case_id.in_([d.case_id for d in diverged] + within),
                    Alert.branch == branch,
                    Alert.pr_number.is_(None),
                    Alert.status.in_([AlertStatus.open, AlertStatus.acknowledged]),
                )
            )
        }
        for found in diverged:
            if found.case_id in open_ones:
                continue
            alert, created = open_alert(
                session,
                f"{ALERT_PREFIX}{found.case_fingerprint}:branch:{branch}:{run_id}",
                AlertKind.correctness,
                found.title,
                case_id=found.case_id,
                run_id=run_id,
                branch=branch,
                details=found.details,
            )
            if created:
                summary.correctness_alerts += 1
                event = {"alert_id": alert.id, "case_id": found.case_id, "branch": branch, "commit": sha}
                event |= {**found.details, "links": {"alerts": f"{public_url.rstrip('/')}/alerts"}}
                emit(session, EventType.correctness_failed, event)
                summary.events += 1
        for case_id in within:
            if case_id in open_ones:
                change_status(
                    session,
                    open_ones[case_id],
                    AlertStatus.resolved,
                    "detector",
                    f"within the band again in run {run_id} at commit {sha}",
                )
                summary.resolved_alerts += 1


@dataclass(frozen=True)
class Overlay:
    """A training case's loss in one run over its reference's, with the band around the reference: the
    merge base's for a pull request's run that has one, else bf16 eager or eager of the same run."""

    case: Case
    run_id: int
    loss: list[float | None]
    reference: str  # "the base", "bf16 eager", "eager"; "" with nothing to compare against
    reference_loss: list[float | None]
    tolerance: list[float]  # per step: how far the loss may lie from the reference's
    comparison: TrajectoryComparison | None

    @property
    def description(self) -> str:
        return self.comparison.describe(self.reference) if self.comparison else ""


def overlay(session: Session, case_id: int, run_id: int | None = None) -> Overlay | None:
    """The overlay of the case in `run_id` (default: the newest run that trained it); None when it has
    no trajectory there."""
    run_id = run_id if run_id is not None else latest_trajectory_run(session.connection(), case_id)
    run = session.get(Run, run_id) if run_id is not None else None
    if run is None:
        return None
    judged = next((j for j in judge_run(session, run) if j.case.id == case_id), None)
    if judged is None:
        return None
    if run.pr_number is not None:
        judged = against_base(session, [judged], merge_base_runs(session, run))[0]
    if judged.against_base is not None and judged.base_trajectory is not None:
        pairing, name, reference, comparison = (
            Pairing.head_vs_base,
            "the base",
            judged.base_trajectory.loss,
            judged.against_base,
        )
        base_run = session.get_one(Run, judged.base_trajectory.run_id)
        band = _band(session, case_id, identical_code_runs(session, base_run, include_run=True))
    elif judged.in_run is not None and judged.reference_case_id is not None:
        pairing, name, comparison, band = (
            Pairing.recipe_vs_bf16 if judged.reference == "bf16 eager" else Pairing.execution_vs_eager,
            judged.reference,
            judged.in_run,
            judged.band,
        )
        reference = next(
            t.loss
            for t in trajectories_in_runs(session.connection(), [run.id])
            if t.case_id == judged.reference_case_id
        )
    else:
        return Overlay(judged.case, run.id, judged.trajectory.loss, "", [], [], None)
    tolerance = [float(v) for v in band.tolerance(pairing, reference)]
    return Overlay(judged.case, run.id, judged.trajectory.loss, name, reference, tolerance, comparison)

"""Each TE release judged against the release before it on the same branch and machine, as a pull request
is judged against its merge base: the comparer on both sides' samples (one run per release is too few
points for a change point). Which runs are compared with which is tewatch.detect.release_steps' rule;
this reads the releases, compares and stores. Read and computed first, then stored in one short write
transaction."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Engine, delete
from sqlalchemy.orm import Session

from tewatch.core.te_releases import is_release
from tewatch.detect.compare import Comparison
from tewatch.detect.config import CompareConfig
from tewatch.detect.release_steps import Step, every_step, has_step, steps_of_run
from tewatch.detect.version import DETECTOR_VERSION
from tewatch.pipeline.history import SeriesInfo
from tewatch.pipeline.pr_comparison import compare_run_samples, nan_to_none
from tewatch.store.engine.database import write_session
from tewatch.store.reads.release_reads import release_places, releases_on
from tewatch.store.schema.alert_models import ReleaseComparison
from tewatch.store.schema.models import Run


@dataclass(frozen=True)
class StepTarget:
    """One run of a release, to be judged against the newest runs of the release before."""

    branch: str
    machine_id: int
    base_version: str
    head_version: str
    base_run_ids: tuple[int, ...]
    head_run_id: int


@dataclass
class ReleaseStepPlan:
    target: StepTarget
    compared: list[tuple[int, SeriesInfo, Comparison]]  # nothing stored yet


def step_targets(session: Session, run: Run) -> list[StepTarget]:
    """The release steps a branch run of a TE release changes (tewatch.detect.release_steps.steps_of_run)."""
    version = run.environment.te_version
    if run.pr_number is not None or not run.branch or not is_release(version):
        return []
    releases = releases_on(session.connection(), run.branch, run.machine_id)
    return [_target(run.branch, run.machine_id, step) for step in steps_of_run(releases, version, run.id)]


def _target(branch: str, machine_id: int, step: Step) -> StepTarget:
    return StepTarget(
        branch, machine_id, step.base_version, step.head_version, step.base_run_ids, step.head_run_id
    )


def branch_targets(session: Session, branch: str) -> list[StepTarget]:
    """Every run of every release step on a branch, on each machine (a store filled before release steps
    were stored, or compared again after the comparer changed)."""
    conn = session.connection()
    return [
        _target(branch, machine_id, step)
        for _, machine_id, _, _ in release_places(conn, branch)
        for step in every_step(releases_on(conn, branch, machine_id))
    ]


def plan_release_steps(
    session: Session, targets: list[StepTarget], config: CompareConfig
) -> list[ReleaseStepPlan]:
    return [
        ReleaseStepPlan(t, compare_run_samples(session, t.head_run_id, list(t.base_run_ids), config)[0])
        for t in targets
    ]


def store_release_steps(engine: Engine, plans: list[ReleaseStepPlan]) -> int:
    """Each planned run's comparisons in place of the ones stored before; how many were stored."""
    if not plans:
        return 0
    stored = 0
    with write_session(engine) as session:
        for plan in plans:
            t = plan.target
            session.execute(delete(ReleaseComparison).where(ReleaseComparison.head_run_id == t.head_run_id))
            for series_id, _, comparison in plan.compared:
                if not has_step(comparison.n_base, comparison.n_head):
                    continue
                session.add(
                    ReleaseComparison(
                        branch=t.branch,
                        machine_id=t.machine_id,
                        base_version=t.base_version,
                        head_version=t.head_version,
                        head_run_id=t.head_run_id,
                        base_run_ids=list(t.base_run_ids),
                        series_id=series_id,
                        verdict=comparison.verdict.value,
                        baseline=nan_to_none(comparison.baseline),
                        head=nan_to_none(comparison.head),
                        effect=nan_to_none(comparison.effect),
                        ci_low=nan_to_none(comparison.ci_low),
                        ci_high=nan_to_none(comparison.ci_high),
                        q_value=nan_to_none(comparison.q_value),
                        n_base=comparison.n_base,
                        n_head=comparison.n_head,
                        min_effect=comparison.min_effect,
                        detector_version=DETECTOR_VERSION,
                    )
                )
                stored += 1
    return stored


def detect_branch_releases(engine: Engine, branch: str, config: CompareConfig | None = None) -> int:
    """Compare every release step of a branch again; how many comparisons were stored."""
    with Session(engine) as session:
        plans = plan_release_steps(session, branch_targets(session, branch), config or CompareConfig())
    return store_release_steps(engine, plans)


def detect_release_steps(engine: Engine, run_ids: list[int], config: CompareConfig | None = None) -> int:
    """Plan and store the release comparisons these runs change, each head run once; how many were stored."""
    with Session(engine) as session:
        targets: dict[int, StepTarget] = {}
        for run_id in run_ids:
            run = session.get(Run, run_id)
            if run is not None:
                for target in step_targets(session, run):
                    targets[target.head_run_id] = target
        plans = plan_release_steps(session, list(targets.values()), config or CompareConfig())
    return store_release_steps(engine, plans)

"""Detection after an upload: correctness flips, then the pull request's comparison or change points on
the run's branch, each read and computed first and then stored in short write transactions, so uploads and
acknowledgements wait for a batch at most, never for a whole detection."""

from __future__ import annotations

from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from tewatch.detect.config import ChangePointConfig, CompareConfig
from tewatch.pipeline.branch_detection import detect_on_branch
from tewatch.pipeline.correctness import correctness_changes, store_correctness
from tewatch.pipeline.kernel_alerts import alert_kernel_changes
from tewatch.pipeline.pr_comparison import PrComparisonPlan, plan_pr_comparison, store_pr_comparison
from tewatch.pipeline.release_steps import detect_release_steps
from tewatch.pipeline.summary import DetectSummary
from tewatch.pipeline.training import store_divergence_alerts
from tewatch.store.engine.database import write_session
from tewatch.store.schema.models import Result, Run


def detect_after_upload(
    engine: Engine,
    run_id: int,
    public_url: str,
    change_config: ChangePointConfig | None = None,
    compare_config: CompareConfig | None = None,
) -> DetectSummary:
    """Correctness flips, then either the PR comparison or, on a branch, training divergences, change points
    on the run's branch and its TE release against the one before: each read and computed first, then stored in short write transactions."""
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
        store_divergence_alerts(engine, run_id, public_url, summary)
        detect_on_branch(
            engine, branch, public_url, change_config or ChangePointConfig(), summary, series_ids
        )
        detect_release_steps(engine, [run_id], compare_config)
        summary.kernel_alerts += alert_kernel_changes(engine, run_id)
    return summary

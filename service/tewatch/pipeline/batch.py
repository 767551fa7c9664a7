"""Detection after a batch of uploads in one pass: what `detect_after_upload` does for each run, at the
cost of the batch rather than of every run's whole history.

Branch runs are replayed in commit order: a case's previous verdict is the one at the commit before, read
from one query per branch, and a run's correctness changes are read only when it opens or resolves a
correctness alert. Change points run once per branch over the series the batch touched. Pull-request runs
take the per-run path. As after one upload, everything is read and computed first and stored in short
write transactions."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import Engine, func, select, text
from sqlalchemy.orm import Session

from tewatch.detect.config import ChangePointConfig, CompareConfig
from tewatch.detect.flips import replay_flips
from tewatch.pipeline.branch_detection import detect_on_branch
from tewatch.pipeline.correctness import CorrectnessChanges, correctness_changes, store_correctness
from tewatch.pipeline.history import run_order
from tewatch.pipeline.pr_comparison import plan_pr_comparison, store_pr_comparison
from tewatch.pipeline.release_steps import detect_release_steps
from tewatch.pipeline.summary import DetectSummary
from tewatch.pipeline.training import store_divergence_alerts
from tewatch.store.engine.database import write_session
from tewatch.store.schema.alert_models import Alert, AlertKind, AlertStatus
from tewatch.store.schema.models import Commit, Result, Run, Verdict, VerdictStatus

CHUNK = 500
# PostgreSQL: batches detect one at a time (SQLite's write transactions already take the database's lock
# one at a time), else two batches of one branch open the same alerts at once
DETECTION_LOCK = 0x7465776174636801


@contextmanager
def one_batch_at_a_time(engine: Engine) -> Iterator[None]:
    if engine.dialect.name != "postgresql":
        yield
        return
    with engine.connect() as connection:  # a session-level lock: held across the batch's transactions
        connection.execute(text("SELECT pg_advisory_lock(:key)"), {"key": DETECTION_LOCK})
        connection.commit()
        try:
            yield
        finally:
            connection.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": DETECTION_LOCK})
            connection.commit()


def detect_after_uploads(
    engine: Engine,
    run_ids: list[int],
    public_url: str,
    change_config: ChangePointConfig | None = None,
    compare_config: CompareConfig | None = None,
) -> DetectSummary:
    summary = DetectSummary()
    with one_batch_at_a_time(engine):
        with Session(engine) as session:
            runs = _runs(session, run_ids)
            pr_runs = [r.id for r in runs if r.pr_number is not None]
            by_branch: dict[str, list[int]] = defaultdict(list)
            for run in runs:
                if run.pr_number is None and run.branch:
                    by_branch[run.branch].append(run.id)
        for run_id in pr_runs:
            with Session(engine) as session:
                run = session.get_one(Run, run_id)
                changes = correctness_changes(session, run, public_url)
                plan = plan_pr_comparison(
                    session, run, changes.rows, public_url, compare_config or CompareConfig()
                )
            store_correctness(engine, changes, summary)
            with write_session(engine) as session:
                store_pr_comparison(session, plan, summary)
        for branch, branch_run_ids in sorted(by_branch.items()):
            with Session(engine) as session:
                replayed = replay_correctness(session, branch, branch_run_ids, public_url)
                series_ids = sorted(_touched_series(session, branch_run_ids))
            for changes in replayed:  # in commit order: an alert one run opens, a later one may resolve
                store_correctness(engine, changes, summary)
                store_divergence_alerts(engine, changes.run_id, public_url, summary)
            detect_on_branch(
                engine, branch, public_url, change_config or ChangePointConfig(), summary, series_ids
            )
            detect_release_steps(engine, branch_run_ids, compare_config)
    return summary


def _runs(session: Session, run_ids: list[int]) -> list[Run]:
    ids = sorted(set(run_ids))
    runs: list[Run] = []
    for start in range(0, len(ids), CHUNK):
        runs += session.scalars(select(Run).where(Run.id.in_(ids[start : start + CHUNK]))).all()
    missing = set(ids) - {r.id for r in runs}
    if missing:
        raise LookupError(f"no run {min(missing)}")
    return runs


def _touched_series(session: Session, run_ids: list[int]) -> set[int]:
    touched: set[int] = set()
    for start in range(0, len(run_ids), CHUNK):
        touched.update(
            session.scalars(select(Result.series_id).where(Result.run_id.in_(run_ids[start : start + CHUNK])))
        )
    return touched


def replay_correctness(
    session: Session, branch: str, run_ids: list[int], public_url: str
) -> list[CorrectnessChanges]:
    """Each batch run's correctness changes in commit order, given the verdict each case had at the run
    before; runs that open or resolve no correctness alert are left out."""
    batch = set(run_ids)
    rows = session.execute(
        select(
            Verdict.case_id,
            Verdict.status,
            Run.id,
            func.coalesce(Commit.ordered_at, Commit.committed_at),
            Run.started_at,
            Run.uploaded_at,
        )
        .join(Run, Verdict.run_id == Run.id)
        .join(Commit, Run.commit_id == Commit.id)
        .where(Run.branch == branch, Run.pr_number.is_(None))
    ).all()
    by_run: dict[int, list[tuple[int, VerdictStatus]]] = defaultdict(list)
    order = {}
    for case_id, status, run_id, committed_at, started_at, uploaded_at in rows:
        by_run[run_id].append((case_id, status))
        order[run_id] = run_order(committed_at, started_at, uploaded_at, run_id)
    alerted = {
        case_id
        for case_id in session.scalars(
            select(Alert.case_id).where(
                Alert.kind == AlertKind.correctness,
                Alert.branch == branch,
                Alert.pr_number.is_(None),
                Alert.status.in_([AlertStatus.open, AlertStatus.acknowledged]),
            )
        )
        if case_id is not None
    }
    ordered = [(run_id, by_run[run_id]) for run_id in sorted(by_run, key=order.__getitem__)]
    return [
        correctness_changes(session, session.get_one(Run, found.run), public_url, before=found.before)
        for found in replay_flips(ordered, batch, alerted)
    ]

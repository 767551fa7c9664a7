"""The commits a bisection of an alert starts from: a change point's commit before and commit after; a
correctness alert's failing run and the last earlier run of its branch and machine where the case passed."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from tewatch.store.schema.alert_models import Alert, Detection
from tewatch.store.schema.models import Case, Commit, Run, Series, Verdict, VerdictStatus


@dataclass(frozen=True)
class Endpoints:
    good: str
    bad: str
    case: str  # module.Class, what --bench selects


def _sha(session: Session, commit_id: int) -> str:
    return session.scalars(select(Commit.sha).where(Commit.id == commit_id)).one()


def alert_endpoints(session: Session, alert: Alert) -> Endpoints | None:
    case_id = alert.case_id
    if case_id is None and alert.series_id is not None:
        case_id = session.scalars(select(Series.case_id).where(Series.id == alert.series_id)).one_or_none()
    case = session.get(Case, case_id) if case_id is not None else None
    if case is None:
        return None
    if alert.detection_id is not None:
        detection = session.get(Detection, alert.detection_id)
        if detection is None:
            return None
        return Endpoints(
            _sha(session, detection.before_commit_id), _sha(session, detection.commit_id), case.case_name
        )
    run = session.get(Run, alert.run_id) if alert.run_id is not None else None
    if run is None:
        return None
    passed = session.scalars(
        select(Run.commit_id)
        .join(Verdict, Verdict.run_id == Run.id)
        .where(
            Verdict.case_id == case.id,
            Verdict.status == VerdictStatus.passed,
            Run.id < run.id,
            Run.machine_id == run.machine_id,
            Run.branch == run.branch,
            Run.pr_number.is_(None),
        )
        .order_by(Run.id.desc())
        .limit(1)
    ).one_or_none()
    if passed is None:
        return None
    return Endpoints(_sha(session, passed), _sha(session, run.commit_id), case.case_name)

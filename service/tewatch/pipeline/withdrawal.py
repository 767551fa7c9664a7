"""A change point that later history no longer supports: inactive, and its regression alert resolved."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from tewatch.alerts.lifecycle import change_status
from tewatch.pipeline.summary import DetectSummary
from tewatch.store.alert_models import Alert, AlertKind, AlertStatus, Detection

STILL_OPEN = (AlertStatus.open, AlertStatus.acknowledged)


def withdraw(session: Session, detection: Detection, summary: DetectSummary, last_sha: str) -> None:
    detection.active = False
    summary.withdrawn += 1
    alerts = session.scalars(
        select(Alert).where(
            Alert.detection_id == detection.id,
            Alert.kind == AlertKind.regression,
            Alert.status.in_(STILL_OPEN),
        )
    )
    for alert in alerts:
        change_status(
            session,
            alert,
            AlertStatus.resolved,
            "detector",
            f"the change point is withdrawn: the history up to commit {last_sha} no longer shows it",
        )
        alert.details = {**(alert.details or {}), "withdrawn_at_commit": last_sha}
        summary.resolved_alerts += 1

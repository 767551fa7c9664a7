"""A change point that later history no longer supports: inactive, and its regression alert resolved."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlalchemy import select
from sqlalchemy.orm import Session

from tewatch.alerts.lifecycle import change_status
from tewatch.store.alert_models import Alert, AlertKind, AlertStatus, Detection

if TYPE_CHECKING:
    from tewatch.pipeline.detection import DetectSummary

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

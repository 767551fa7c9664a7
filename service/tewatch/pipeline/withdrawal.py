"""Letting go of regression alerts: a change point that later history no longer supports is inactive and
its alert resolved; a regression the series has since undone (back at its earlier level) resolves its
alert, naming the commit, and opens it again should later history take that return back."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from tewatch.alerts.lifecycle import change_status
from tewatch.pipeline.summary import DetectSummary
from tewatch.store.schema.alert_models import CHANGE_POINT_KINDS, Alert, AlertStatus, Detection

STILL_OPEN = (AlertStatus.open, AlertStatus.acknowledged)
RETURNED_KEY = "returned_at_commit"


def withdraw(session: Session, detection: Detection, summary: DetectSummary, last_sha: str) -> None:
    detection.active = False
    summary.withdrawn += 1
    alerts = session.scalars(
        select(Alert).where(
            Alert.detection_id == detection.id,
            Alert.kind.in_(CHANGE_POINT_KINDS),
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


def resolve_returned(
    session: Session, alert: Alert, sha: str, summary: DetectSummary, who: str = "the series is"
) -> None:
    """Resolve an open regression alert whose series is back at its earlier level since commit `sha`."""
    if alert.status not in STILL_OPEN:
        return
    change_status(
        session,
        alert,
        AlertStatus.resolved,
        "detector",
        f"{who} back at the earlier level since commit {sha}",
    )
    alert.details = {**(alert.details or {}), RETURNED_KEY: sha}
    summary.returned += 1
    summary.resolved_alerts += 1


def reopen_unreturned(session: Session, alert: Alert) -> None:
    """Open again an alert resolved for a return that later history no longer shows."""
    if alert.status is AlertStatus.resolved and RETURNED_KEY in (alert.details or {}):
        change_status(session, alert, AlertStatus.open, "detector", "the history no longer shows the return")
        alert.details = {k: v for k, v in alert.details.items() if k != RETURNED_KEY}

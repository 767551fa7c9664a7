"""Alert lifecycle: open -> acknowledged -> resolved | dismissed; a resolved or dismissed alert may reopen."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from tewatch.store.schema.alert_models import Alert, AlertKind, AlertStatus, AlertStatusChange

ALLOWED = {
    AlertStatus.open: {AlertStatus.acknowledged, AlertStatus.resolved, AlertStatus.dismissed},
    AlertStatus.acknowledged: {AlertStatus.open, AlertStatus.resolved, AlertStatus.dismissed},
    AlertStatus.resolved: {AlertStatus.open},
    AlertStatus.dismissed: {AlertStatus.open},
}


class TransitionError(ValueError):
    pass


def change_status(session: Session, alert: Alert, to: AlertStatus, actor: str = "", note: str = "") -> Alert:
    if to == alert.status:
        return alert
    if to not in ALLOWED[alert.status]:
        allowed = ", ".join(sorted(s.value for s in ALLOWED[alert.status]))
        raise TransitionError(
            f"alert {alert.id} is {alert.status.value}; it can move to {allowed}, not {to.value}"
        )
    session.add(
        AlertStatusChange(
            alert=alert, from_status=alert.status.value, to_status=to.value, actor=actor, note=note
        )
    )
    alert.status = to
    return alert


def open_alert(
    session: Session, dedupe_key: str, kind: AlertKind, title: str, **fields: Any
) -> tuple[Alert, bool]:
    """The alert with this key, created open if new: (alert, created). Detection run twice adds nothing."""
    existing = session.scalar(select(Alert).where(Alert.dedupe_key == dedupe_key))
    if existing is not None:
        return existing, False
    alert = Alert(dedupe_key=dedupe_key, kind=kind, title=title[:500], status=AlertStatus.open, **fields)
    session.add(alert)
    session.add(
        AlertStatusChange(alert=alert, from_status=None, to_status=AlertStatus.open.value, actor="detector")
    )
    session.flush()
    return alert, True

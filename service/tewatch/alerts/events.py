"""Typed webhook events, written to the outbox in the caller's transaction (one delivery per subscriber)."""

from __future__ import annotations

import enum
import json
import uuid
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from tewatch.store.schema.alert_models import WebhookDelivery, WebhookEvent, WebhookSubscription


class EventType(str, enum.Enum):
    regression_detected = "regression.detected"
    correctness_failed = "correctness.failed"
    pr_report = "pr.report"
    bisection_finished = "bisection.finished"


EVENT_TYPES = tuple(e.value for e in EventType)


def event_body(event_id: str, event_type: EventType, payload: dict[str, Any]) -> str:
    envelope = {
        "id": event_id,
        "type": event_type.value,
        "created_at": datetime.now(UTC).isoformat(),
        "data": payload,
    }
    return json.dumps(envelope, sort_keys=True, separators=(",", ":"), default=str)


def emit(session: Session, event_type: EventType, payload: dict[str, Any]) -> WebhookEvent:
    """Add the event and a pending delivery for every active subscription to it; the caller commits."""
    event_id = str(uuid.uuid4())
    event = WebhookEvent(id=event_id, type=event_type.value, body=event_body(event_id, event_type, payload))
    session.add(event)
    subscriptions = session.scalars(select(WebhookSubscription).where(WebhookSubscription.active.is_(True)))
    for subscription in subscriptions:
        if event_type.value in subscription.event_types:
            session.add(
                WebhookDelivery(id=str(uuid.uuid4()), event_id=event_id, subscription_id=subscription.id)
            )
    return event

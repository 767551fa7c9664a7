"""Sending a delivery again on request, at most so many times a minute per subscription: without a limit,
anyone holding an admin token could have the service hammer a receiver (or probe one) as fast as they can
ask. Each request is recorded (webhook_redeliveries) in the transaction that queues the delivery, so every
process of the service counts the same requests."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from tewatch.core.clock import as_utc
from tewatch.store.schema.alert_models import DeliveryStatus, WebhookDelivery, WebhookRedelivery

WINDOW = timedelta(minutes=1)


class NoSuchDelivery(LookupError):
    pass


class AlreadyQueued(Exception):
    """The delivery is waiting for its next attempt already."""


class TooManyRedeliveries(Exception):
    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = retry_after


def redeliver(session: Session, delivery_id: str, per_minute: int) -> WebhookDelivery:
    """Queue the delivery for an attempt now (same delivery id), in the caller's write transaction."""
    delivery = session.get(WebhookDelivery, delivery_id)
    if delivery is None:
        raise NoSuchDelivery(f"no delivery {delivery_id}")
    if delivery.status is DeliveryStatus.pending:
        raise AlreadyQueued(f"delivery {delivery_id} is queued already (after {delivery.attempts} attempts)")
    now = datetime.now(UTC)
    recent = session.execute(
        select(func.count(), func.min(WebhookRedelivery.requested_at)).where(
            WebhookRedelivery.subscription_id == delivery.subscription_id,
            WebhookRedelivery.requested_at > now - WINDOW,
        )
    ).one()
    if recent[0] >= per_minute:
        oldest = as_utc(recent[1])
        wait = max(1, math.ceil((oldest + WINDOW - now).total_seconds()))
        raise TooManyRedeliveries(
            f"subscription {delivery.subscription_id} had {recent[0]} redeliveries in the last minute, "
            f"the most it may (TEWATCH_WEBHOOK_REDELIVERIES_PER_MINUTE); try again in {wait} s",
            wait,
        )
    session.add(
        WebhookRedelivery(subscription_id=delivery.subscription_id, delivery_id=delivery.id, requested_at=now)
    )
    delivery.status = DeliveryStatus.pending
    delivery.next_attempt_at = now
    delivery.lease_until = None
    session.flush()
    return delivery

"""Running the outbox worker until no delivery is pending."""

from __future__ import annotations

import time

from sqlalchemy import func, select

from tewatch.alerts.delivery import OutboxWorker
from tewatch.store.schema.alert_models import DeliveryStatus, WebhookDelivery


def drain(worker: OutboxWorker, timeout: float = 60.0) -> None:
    """Passes of `worker` until no delivery is pending; fails after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        worker.run_once()
        with worker.sessions() as session:
            pending = session.scalar(
                select(func.count())
                .select_from(WebhookDelivery)
                .where(WebhookDelivery.status == DeliveryStatus.pending)
            )
        if not pending:
            return
        time.sleep(0.05)
    raise AssertionError(f"deliveries still pending after {timeout:.0f} s")

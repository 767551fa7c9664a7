"""A real `tewatch serve` delivers the outbox; killed mid-delivery and started again, it loses nothing."""

from __future__ import annotations

import time
from collections import Counter

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from tests.alerts.receiver import Receiver
from tests.conftest import start_server, stop_server
from tewatch.alerts.events import EventType, emit
from tewatch.alerts.subscriptions import add_subscription
from tewatch.store.engine.database import make_engine
from tewatch.store.schema.alert_models import DeliveryStatus, WebhookDelivery

pytestmark = pytest.mark.long_running

SECRET = "restart-test-secret-value"


def wait_for(condition, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return False


def test_killing_the_service_mid_delivery_loses_no_event(db_url, tmp_path, monkeypatch):
    monkeypatch.setenv("TEWATCH_WEBHOOK_POLL_SECONDS", "0.1")
    # a dead worker's lease ends after 7 s (max(3 x timeout, deadline) + 1): the second service waits for
    # it before it sends the delivery the first one was killed in; the receiver answers in 0.4 s
    monkeypatch.setenv("TEWATCH_WEBHOOK_TIMEOUT_SECONDS", "2")
    monkeypatch.setenv("TEWATCH_WEBHOOK_DEADLINE_SECONDS", "6")
    monkeypatch.setenv("TEWATCH_WEBHOOK_BACKOFF_SECONDS", "0.2")
    monkeypatch.setenv("TEWATCH_WEBHOOK_ALLOW_LOOPBACK", "true")
    engine = make_engine(db_url)
    with Receiver(SECRET, delay=0.4) as receiver:
        with Session(engine) as session, session.begin():
            add_subscription(session, receiver.url, SECRET, ["correctness.failed"], allow_loopback=True)
            event_ids = [
                emit(session, EventType.correctness_failed, {"case": f"linear.Linear rank {n}"}).id
                for n in range(8)
            ]
        server = start_server(db_url, tmp_path / "first.log")
        try:
            assert wait_for(lambda: len(receiver.received) >= 2, 30), "the service never started delivering"
        finally:
            server.process.kill()  # no shutdown: a crash in the middle of a POST
            server.process.wait(10)
        delivered_before_restart = len(receiver.accepted())
        assert delivered_before_restart < len(event_ids)
        server = start_server(db_url, tmp_path / "second.log")
        try:
            assert wait_for(lambda: len({r.event_id for r in receiver.accepted()}) == len(event_ids), 60)
            # deliveries run in parallel: the last answers may still be on their way to being recorded
            assert wait_for(lambda: delivery_statuses(engine) == {DeliveryStatus.delivered}, 30)
        finally:
            stop_server(server)
    accepted = receiver.accepted()
    assert sorted({r.event_id for r in accepted}) == sorted(event_ids)
    assert all(r.signature_ok for r in accepted)
    # at least once: only a POST in flight at the kill may arrive twice, and with its same delivery id
    per_delivery = Counter(r.delivery_id for r in accepted)
    assert len(per_delivery) == len(event_ids)
    assert sum(n - 1 for n in per_delivery.values()) <= 1
    assert delivery_statuses(engine) == {DeliveryStatus.delivered}
    engine.dispose()


def delivery_statuses(engine) -> set[DeliveryStatus]:
    with Session(engine) as session:
        return set(session.scalars(select(WebhookDelivery.status)))

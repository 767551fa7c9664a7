"""Signed deliveries to a real receiver on loopback: signature, retries until it recovers, exactly once."""

from __future__ import annotations

import json
import time
from collections import Counter

import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from tests.alerts.drain import drain
from tests.alerts.receiver import Receiver
from tests.conftest import free_port
from tewatch.alerts.delivery import NO_ANSWER, UNSENDABLE, DeliveryPolicy, OutboxWorker
from tewatch.alerts.events import EventType, emit
from tewatch.alerts.signing import sign, verify
from tewatch.alerts.subscriptions import SubscriptionError, add_subscription
from tewatch.store.engine.database import make_engine
from tewatch.store.schema.alert_models import (
    DeliveryStatus,
    WebhookAttempt,
    WebhookDelivery,
    WebhookSubscription,
)

SECRET = "s3cret-for-the-receiver"
FAST = DeliveryPolicy(
    timeout_seconds=2,
    max_attempts=8,
    backoff_seconds=0.05,
    backoff_max_seconds=0.2,
    lease_seconds=5,
    poll_seconds=0.05,
    allow_loopback=True,  # the receivers listen on 127.0.0.1
)


@pytest.fixture
def engine(db_url):
    engine = make_engine(db_url)
    yield engine
    engine.dispose()


def subscribe_and_emit(engine, url: str, events: int) -> list[str]:
    with Session(engine) as session, session.begin():
        add_subscription(
            session, url, SECRET, ["regression.detected", "correctness.failed"], allow_loopback=True
        )
        ids = [
            emit(session, EventType.regression_detected, {"n": n, "series": "gemm.Gemm.time"}).id
            for n in range(events)
        ]
        emit(session, EventType.pr_report, {"markdown": "not subscribed"})
    return ids


def drain_counting(worker: OutboxWorker) -> tuple[int, int]:
    """Passes until one finds nothing due: (delivered, failed attempts) of them all."""
    delivered = failed = 0
    while True:
        ok, bad = worker.run_once()
        if not ok + bad:
            return delivered, failed
        delivered, failed = delivered + ok, failed + bad


def test_signature_verifies_and_headers_name_the_event_and_delivery(engine):
    with Receiver(SECRET) as receiver:
        [event_id] = subscribe_and_emit(engine, receiver.url, 1)
        worker = OutboxWorker(engine, FAST)
        assert worker.run_once() == (1, 0)
        worker.close()
    [got] = receiver.received
    assert got.signature_ok and got.event_type == "regression.detected" and got.event_id == event_id
    assert not verify("another-secret-entirely", got.body, sign(SECRET, got.body))
    assert json.loads(got.body)["data"]["series"] == "gemm.Gemm.time"


def test_receiver_down_then_failing_then_recovered_gets_every_event_exactly_once(engine):
    port = free_port()
    url = f"http://127.0.0.1:{port}/hook"
    event_ids = subscribe_and_emit(engine, url, 5)
    worker = OutboxWorker(engine, FAST)
    # connection refused, nobody listens yet: one delivery of the subscription a pass, the oldest first
    assert [worker.run_once() for _ in event_ids] == [(0, 1)] * 5
    with Receiver(SECRET, port=port, fail_first=3) as receiver:  # then 503 three times
        drain(worker, timeout=30)
    worker.close()
    accepted = receiver.accepted()
    assert sorted(r.event_id for r in accepted) == sorted(event_ids)
    assert max(Counter(r.delivery_id for r in accepted).values()) == 1
    assert all(r.signature_ok for r in receiver.received)
    with Session(engine) as session:
        statuses = session.scalars(select(WebhookDelivery.status)).all()
        attempts = session.scalar(select(func.count()).select_from(WebhookAttempt))
        refused = session.scalars(select(WebhookAttempt.error).where(WebhookAttempt.attempt == 1)).all()
    assert statuses == [DeliveryStatus.delivered] * 5
    assert attempts == 5 + 3 + 5  # refused, three 503s, then one success each
    assert refused == [NO_ANSWER] * 5  # in the same words as any other attempt that got no HTTP answer


def test_a_delivery_gives_up_after_its_last_attempt_and_keeps_its_log(engine):
    with Receiver(SECRET, fail_first=100) as receiver:
        subscribe_and_emit(engine, receiver.url, 1)
        worker = OutboxWorker(
            engine,
            DeliveryPolicy(
                max_attempts=3, backoff_seconds=0.01, backoff_max_seconds=0.01, allow_loopback=True
            ),
        )
        deadline = time.monotonic() + 30  # a cap: the loop ends at the third delivery
        while time.monotonic() < deadline and len(receiver.received) < 3:
            worker.run_once()
            time.sleep(0.02)
        worker.run_once()
        worker.close()
    assert len(receiver.received) == 3
    with Session(engine) as session:
        [delivery] = session.scalars(select(WebhookDelivery)).all()
    assert (
        delivery.status == DeliveryStatus.failed
        and delivery.attempts == 3
        and delivery.last_status_code == 503
    )


def test_two_workers_never_send_one_delivery_twice(engine):
    with Receiver(SECRET, delay=0.05) as receiver:
        subscribe_and_emit(engine, receiver.url, 20)
        first, second = OutboxWorker(engine, FAST), OutboxWorker(engine, FAST)
        first.start()
        second.start()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and len(receiver.accepted()) < 20:
            time.sleep(0.05)
        first.stop()
        second.stop()
    assert len(receiver.accepted()) == 20
    assert max(Counter(r.delivery_id for r in receiver.accepted()).values()) == 1


def test_bad_subscriptions_are_refused_with_a_reason(engine):
    with Session(engine) as session:
        for url, secret, types, reason in [
            ("ftp://example.org/x", SECRET, ["pr.report"], "http"),
            ("http://bot.example/x", "short", ["pr.report"], "16 characters"),
            ("http://bot.example/x", SECRET, ["pr.opened"], "pr.opened"),
            ("http://bot.example/x\r\nX-Injected: 1", SECRET, ["pr.report"], "control characters"),
            ("http://bot.example/x\n", SECRET, ["pr.report"], "control characters"),
            ("http://exa mple.org/x", SECRET, ["pr.report"], "whitespace"),
            ("http://[::1/x", SECRET, ["pr.report"], "not valid"),
            ("http://xn--/x", SECRET, ["pr.report"], "not valid"),
            ("http://bot.example:99999/x", SECRET, ["pr.report"], "not valid"),
            ("http://bot.example:0/x", SECRET, ["pr.report"], "port from 1 to 65535"),
            ("http://bot.example/x", SECRET + "\x00", ["pr.report"], "NUL"),
        ]:
            with pytest.raises(SubscriptionError, match=reason):
                add_subscription(session, url, secret, types)


def test_a_subscription_whose_url_cannot_be_sent_to_fails_alone(engine):
    """URLs from before creation checked them: a CR/LF or an invalid IDNA host fails at send time. Such a
    delivery fails for good at once (no retries), and the other subscribers get theirs in the same pass."""
    bad_urls = ["http://127.0.0.1/hook\r\nX-Injected: 1", "http://xn--/hook"]
    with Receiver(SECRET) as receiver:
        with Session(engine) as session, session.begin():
            for url in bad_urls:  # as an older version stored them, past today's checks
                session.add(WebhookSubscription(url=url, secret=SECRET, event_types=["regression.detected"]))
        event_ids = subscribe_and_emit(engine, receiver.url, 3)
        worker = OutboxWorker(engine, FAST)
        assert drain_counting(worker) == (3, 2 * 3)
        worker.close()
    assert sorted(r.event_id for r in receiver.accepted()) == sorted(event_ids)
    with Session(engine) as session:
        failed = session.scalars(
            select(WebhookDelivery).where(WebhookDelivery.status == DeliveryStatus.failed)
        ).all()
        errors = session.scalars(select(WebhookAttempt.error).where(WebhookAttempt.error.is_not(None))).all()
    assert len(failed) == 6 and all(d.attempts == 1 for d in failed)
    assert all(error.startswith(UNSENDABLE) for error in errors) and len(errors) == 6


def test_an_error_while_sending_one_delivery_does_not_stop_the_pass(engine, monkeypatch):
    with Receiver(SECRET) as receiver:
        event_ids = subscribe_and_emit(engine, receiver.url, 4)
        worker = OutboxWorker(engine, FAST)
        load, broken = worker._load, []

        def load_or_fail(delivery_id):
            if not broken:
                broken.append(delivery_id)
                raise RuntimeError("the database went away for this one")
            return load(delivery_id)

        monkeypatch.setattr(worker, "_load", load_or_fail)
        assert drain_counting(worker) == (3, 1)
        worker.close()
    assert len(receiver.accepted()) == 3 and {r.event_id for r in receiver.accepted()} < set(event_ids)

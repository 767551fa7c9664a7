"""Webhooks against a real `tewatch serve` (SQLite and PostgreSQL): internal addresses are refused when
subscribed and again when connecting (after the name is resolved), the delivery log does not tell a
closed port from an open one, redelivery is rate-limited, and a receiver that trickles its answer holds up
its own deliveries only."""

from __future__ import annotations

import time

import pytest
from sqlalchemy.orm import Session

from tests.alerts.receiver import Receiver
from tests.conftest import free_port, start_server, stop_server
from tests.security.receivers import NotHttp, TricklingReceiver
from tewatch.alerts.delivery import NO_ANSWER
from tewatch.alerts.events import EventType, emit
from tewatch.store.engine.database import make_engine
from tewatch.store.schema.alert_models import WebhookSubscription

SECRET = "0123456789abcdef-secret"
EVENTS = ["correctness.failed"]
INTERNAL_URLS = [
    "http://127.0.0.1/hook",
    "http://127.1/hook",
    "http://0x7f000001/hook",
    "http://2130706433/hook",
    "http://localhost:8000/hook",
    "http://LOCALHOST/hook",
    "http://[::1]/hook",
    "http://[::ffff:127.0.0.1]/hook",
    "http://[::ffff:7f00:1]/hook",
    "http://[64:ff9b::7f00:1]/hook",
    "http://169.254.169.254/latest/meta-data/",
    "http://[fe80::1]/hook",
    "http://10.0.0.1/hook",
    "http://172.16.5.4/hook",
    "http://192.168.1.1/hook",
    "http://100.64.0.1/hook",
    "http://[fd00::1]/hook",
    "http://0.0.0.0/hook",
    "http://0/hook",
    "http://[::]/hook",
    "http://224.0.0.1/hook",
    "https://[2002:7f00:1::1]/hook",
]


def wait_for(condition, timeout: float = 60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"not within {timeout} s")


def emit_events(db_url: str, count: int) -> list[str]:
    engine = make_engine(db_url)
    try:
        with Session(engine) as session, session.begin():
            return [emit(session, EventType.correctness_failed, {"n": n}).id for n in range(count)]
    finally:
        engine.dispose()


def deliveries(client, subscription_id: int) -> list[dict]:
    answer = client.get("/api/v1/webhooks/deliveries", params={"subscription_id": subscription_id})
    assert answer.status_code == 200, answer.text
    return answer.json()


def subscribe(client, url: str) -> int:
    answer = client.post("/api/v1/webhooks", json={"url": url, "secret": SECRET, "event_types": EVENTS})
    assert answer.status_code == 201, answer.text
    return answer.json()["id"]


@pytest.fixture
def served(db_url, tmp_path):
    server = start_server(db_url, tmp_path / "serve.log", env={"TEWATCH_WEBHOOK_POLL_SECONDS": "0.1"})
    yield server
    stop_server(server)


@pytest.fixture
def served_with_loopback(db_url, tmp_path):
    env = {
        "TEWATCH_WEBHOOK_ALLOW_LOOPBACK": "true",
        "TEWATCH_WEBHOOK_POLL_SECONDS": "0.1",
        "TEWATCH_WEBHOOK_DEADLINE_SECONDS": "12",
        "TEWATCH_WEBHOOK_TIMEOUT_SECONDS": "10",  # longer than the trickle's gaps: only the deadline ends it
        "TEWATCH_WEBHOOK_MAX_ATTEMPTS": "1",
        "TEWATCH_WEBHOOK_REDELIVERIES_PER_MINUTE": "2",
    }
    server = start_server(db_url, tmp_path / "serve.log", env=env)
    yield server
    stop_server(server)


def test_internal_addresses_are_refused_when_subscribed(served):
    with served.client() as client:
        for url in INTERNAL_URLS:
            answer = client.post(
                "/api/v1/webhooks", json={"url": url, "secret": SECRET, "event_types": EVENTS}
            )
            assert answer.status_code == 422, (url, answer.text)
            assert "not sent to internal addresses" in answer.json()["detail"], url
        # octal spellings: httpx refuses them as URLs before any address is looked at
        octal = client.post(
            "/api/v1/webhooks", json={"url": "http://0177.0.0.1/", "secret": SECRET, "event_types": EVENTS}
        )
        assert octal.status_code == 422 and "not valid" in octal.json()["detail"]
        public = client.post(
            "/api/v1/webhooks", json={"url": "https://8.8.8.8/hook", "secret": SECRET, "event_types": EVENTS}
        )
        assert public.status_code == 201, public.text
        assert [s["url"] for s in client.get("/api/v1/webhooks").json()] == ["https://8.8.8.8/hook"]


def test_a_name_that_resolves_inside_is_refused_when_connecting(served):
    """A subscription stored while its name resolved outside (or by an older version): the connection
    resolves it, finds loopback and sends nothing; the delivery fails at once, saying why."""
    with Receiver(SECRET) as receiver:
        engine = make_engine(served.db_url)
        with Session(engine) as session, session.begin():
            stored = [
                WebhookSubscription(url=url, secret=SECRET, event_types=EVENTS)
                for url in (f"http://localhost:{receiver.port}/hook", f"http://127.1:{receiver.port}/hook")
            ]
            session.add_all(stored)
            session.flush()
            stored_ids = [subscription.id for subscription in stored]
        engine.dispose()
        emit_events(served.db_url, 1)
        with served.client() as client:
            for subscription_id in stored_ids:
                [delivery] = wait_for(
                    lambda s=subscription_id: [d for d in deliveries(client, s) if d["status"] == "failed"]
                )
                assert delivery["attempts"] == 1
                assert delivery["last_error"].startswith("refused destination: ")
                assert "(127.0.0.1) is a loopback address" in delivery["last_error"]
        assert receiver.received == []


def test_loopback_only_where_allowed_and_nothing_else_internal(served_with_loopback):
    with Receiver(SECRET) as receiver, served_with_loopback.client() as client:
        subscription = subscribe(client, receiver.url)
        for url in ("http://169.254.169.254/latest/meta-data/", "http://10.0.0.1/hook", "http://[fd00::1]/"):
            answer = client.post(
                "/api/v1/webhooks", json={"url": url, "secret": SECRET, "event_types": EVENTS}
            )
            assert answer.status_code == 422, url
        [event_id] = emit_events(served_with_loopback.db_url, 1)
        wait_for(lambda: receiver.accepted())
        assert [r.event_id for r in receiver.accepted()] == [event_id]
        # the worker records the delivery once it has read the receiver's answer, after the receiver took it
        settled = wait_for(lambda: [d for d in deliveries(client, subscription) if d["status"] != "pending"])
        assert [d["status"] for d in settled] == ["delivered"]


def test_the_delivery_log_does_not_tell_a_closed_port_from_an_open_one(served_with_loopback):
    closed = f"http://127.0.0.1:{free_port()}/hook"
    with NotHttp() as open_port, served_with_loopback.client() as client:
        ids = [subscribe(client, closed), subscribe(client, open_port.url)]
        emit_events(served_with_loopback.db_url, 1)
        failed = [
            wait_for(lambda s=s: [d for d in deliveries(client, s) if d["status"] == "failed"]) for s in ids
        ]
        assert open_port.connections == 1
    assert [(d["last_error"], d["last_status_code"]) for [d] in failed] == [(NO_ANSWER, None)] * 2


def test_redelivery_is_rate_limited_per_subscription(served_with_loopback):
    with served_with_loopback.client() as client:
        subscription = subscribe(client, f"http://127.0.0.1:{free_port()}/hook")
        emit_events(served_with_loopback.db_url, 1)

        def failed_after(attempts: int):
            return [
                d
                for d in deliveries(client, subscription)
                if d["status"] == "failed" and d["attempts"] == attempts
            ]

        [delivery] = wait_for(lambda: failed_after(1))
        path = f"/api/v1/webhooks/deliveries/{delivery['id']}/redeliver"
        accepted = 0
        while accepted < 4 and (answer := client.post(path)).status_code == 200:  # one more attempt each
            accepted += 1
            wait_for(lambda n=accepted: failed_after(1 + n))
        assert accepted == 2
        refused = answer
        assert refused.status_code == 429, refused.text
        assert 1 <= int(refused.headers["retry-after"]) <= 60
        assert "2 redeliveries in the last minute" in refused.json()["detail"]
        assert client.post("/api/v1/webhooks/deliveries/no-such-delivery/redeliver").status_code == 404
        time.sleep(1)
        [after] = deliveries(client, subscription)
        assert after["attempts"] == 3 and after["status"] == "failed"  # the refused one sent nothing


def test_a_trickling_receiver_holds_up_its_own_deliveries_only(served_with_loopback):
    with (
        TricklingReceiver(interval=1.0) as slow,
        Receiver(SECRET) as healthy,
        served_with_loopback.client() as client,
    ):
        slow_id = subscribe(client, slow.url)
        subscribe(client, healthy.url)
        event_ids = emit_events(served_with_loopback.db_url, 3)
        wait_for(lambda: len(healthy.accepted()) == 3)
        # every event reached the healthy receiver while the slow one's first delivery was still open
        assert slow.connections == 1
        in_flight = deliveries(client, slow_id)
        assert all(d["attempts"] == 0 and d["status"] == "pending" for d in in_flight)
        queued = client.post(f"/api/v1/webhooks/deliveries/{in_flight[0]['id']}/redeliver")
        assert queued.status_code == 409 and "queued already" in queued.json()["detail"]
        assert sorted(r.event_id for r in healthy.accepted()) == sorted(event_ids)
        # the slow delivery ends at its deadline (12 s), though every read got a byte within 10 s
        first = wait_for(lambda: [d for d in deliveries(client, slow_id) if d["attempts"] == 1], timeout=120)
        assert first[0]["last_error"] == NO_ANSWER

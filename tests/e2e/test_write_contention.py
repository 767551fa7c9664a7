"""Writers against one store: uploads, alert acknowledgements and detection at once, on a real `tewatch serve`
over a real SQLite file and PostgreSQL. No answer is a 500; a writer that cannot get its lock in time
answers 503 with Retry-After and stores nothing; every upload lands exactly once and every acknowledged
alert stays acknowledged.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

import pytest
from sqlalchemy import make_url

from tests.conftest import start_server, stop_server
from tests.uploads import parts_of, post_run, tiny_run
from tewatch.alerts.lifecycle import open_alert
from tewatch.store.engine.database import make_engine, write_session
from tewatch.store.schema.alert_models import AlertKind

UPLOADS = 10
FAILING_CASES_PER_UPLOAD = 4  # the tiny fixture's failing cases: a correctness alert each
DEADLINE_S = 240


@contextmanager
def write_lock_held(db_url: str, commit: bool = False) -> Iterator:
    """Another writer holding what uploads and acknowledgements need: SQLite's write lock, or on
    PostgreSQL the tables they write to (reads go on; writes wait). Yields its DB-API connection."""
    url = make_url(db_url)
    if url.get_backend_name() == "sqlite":
        conn = sqlite3.connect(url.database, isolation_level=None)
        conn.execute("BEGIN IMMEDIATE")
    else:
        import psycopg

        conn = psycopg.connect(url.set(drivername="postgresql").render_as_string(hide_password=False))
        conn.execute("LOCK TABLE runs, alerts, webhook_subscriptions IN EXCLUSIVE MODE")
    try:
        yield conn
        if commit:
            conn.execute("COMMIT") if isinstance(conn, sqlite3.Connection) else conn.commit()
    finally:
        if not commit:
            conn.rollback()
        conn.close()


def seed_alert(db_url: str, key: str = "regression:contention") -> int:
    engine = make_engine(db_url)
    try:
        with write_session(engine) as session:
            alert, _ = open_alert(session, key, AlertKind.regression, "gemm slower")
            return alert.id
    finally:
        engine.dispose()


@pytest.fixture
def quick_busy_server(db_url, tmp_path, monkeypatch):
    monkeypatch.setenv("TEWATCH_LOCK_WAIT_SECONDS", "1")
    monkeypatch.setenv("TEWATCH_WEBHOOK_WORKER", "false")
    alert_id = seed_alert(db_url)
    server = start_server(db_url, tmp_path / "serve.log")
    yield server, alert_id
    stop_server(server)


def assert_busy(answer) -> None:
    assert answer.status_code == 503, answer.text
    assert answer.headers["retry-after"].isdigit()
    assert "busy" in answer.json()["detail"] and "nothing was stored" in answer.json()["detail"]


def test_a_writer_that_cannot_get_the_lock_answers_503_and_stores_nothing(quick_busy_server):
    server, alert_id = quick_busy_server
    parts = parts_of(tiny_run(0))
    before = server.counts()
    hook = {"url": "https://bot.example/hook", "secret": "0123456789abcdef", "event_types": ["pr.report"]}
    with server.client() as client:
        with write_lock_held(server.db_url):
            assert_busy(post_run(client, parts, branch="busy"))
            assert_busy(client.post(f"/api/v1/alerts/{alert_id}/status", json={"status": "acknowledged"}))
            assert_busy(client.post("/api/v1/webhooks", json=hook))
            assert client.get("/api/v1/runs").status_code == 200  # reads go on
        assert server.counts() == before
        assert client.get(f"/api/v1/alerts/{alert_id}").json()["status"] == "open"
        assert client.get("/api/v1/webhooks").json() == []
        assert post_run(client, parts, branch="busy").status_code == 201
        answer = client.post(f"/api/v1/alerts/{alert_id}/status", json={"status": "acknowledged"})
        assert answer.status_code == 200 and answer.json()["status"] == "acknowledged"


class Answers:
    """Every answer's status code, and whether each 503 carried a Retry-After."""

    def __init__(self) -> None:
        self.codes: Counter[tuple[str, int]] = Counter()
        self.busy_without_retry_after = 0
        self.lock = threading.Lock()

    def note(self, kind: str, answer) -> int:
        with self.lock:
            self.codes[(kind, answer.status_code)] += 1
            if answer.status_code == 503 and not answer.headers.get("retry-after", "").isdigit():
                self.busy_without_retry_after += 1
        return answer.status_code


@pytest.fixture
def server(db_url, tmp_path, monkeypatch):
    monkeypatch.setenv("TEWATCH_WEBHOOK_WORKER", "false")
    server = start_server(db_url, tmp_path / "serve.log")
    yield server
    stop_server(server)


def test_uploads_acknowledgements_and_detection_at_once(server):
    answers = Answers()
    uploads_done = threading.Event()
    acknowledged: set[int] = set()
    deadline = time.monotonic() + DEADLINE_S

    def upload(index: int) -> None:
        branch = f"load-{index}"
        parts = parts_of(tiny_run(index % 2))
        with server.client() as client:
            while time.monotonic() < deadline:
                code = answers.note("upload", post_run(client, parts, branch=branch))
                if code in (200, 201):
                    return
                assert code == 503
                assert client.get("/api/v1/runs", params={"branch": branch}).json()["total"] == 0
                time.sleep(0.2)

    def acknowledge() -> None:
        with server.client() as client:
            while time.monotonic() < deadline:
                open_ids = [a["id"] for a in client.get("/api/v1/alerts", params={"status": "open"}).json()]
                for alert_id in open_ids:
                    answer = client.post(
                        f"/api/v1/alerts/{alert_id}/status",
                        json={"status": "acknowledged", "actor": "oncall"},
                    )
                    if answers.note("acknowledge", answer) == 200:
                        acknowledged.add(alert_id)
                if (
                    uploads_done.is_set()
                    and not open_ids
                    and len(acknowledged) >= UPLOADS * FAILING_CASES_PER_UPLOAD
                ):
                    return
                time.sleep(0.05)

    def detect() -> None:
        with server.client() as client:
            while not uploads_done.is_set() and time.monotonic() < deadline:
                answers.note("detect", client.post("/api/v1/detect", json={"branch": "load-0"}))

    with ThreadPoolExecutor(max_workers=UPLOADS + 4) as pool:
        helpers = [pool.submit(acknowledge), pool.submit(acknowledge), pool.submit(detect)]
        for future in [pool.submit(upload, i) for i in range(UPLOADS)]:
            future.result()
        uploads_done.set()
        for future in helpers:
            future.result()

    assert not [key for key in answers.codes if key[1] >= 500 and key[1] != 503], answers.codes
    assert answers.busy_without_retry_after == 0
    with server.client() as client:
        for index in range(UPLOADS):
            assert client.get("/api/v1/runs", params={"branch": f"load-{index}"}).json()["total"] == 1
        alerts = client.get("/api/v1/alerts", params={"limit": 1000}).json()
    assert len(alerts) == UPLOADS * FAILING_CASES_PER_UPLOAD  # one detection per stored upload
    assert {a["id"] for a in alerts} == acknowledged
    assert {a["status"] for a in alerts} == {"acknowledged"}


def test_an_acknowledgement_waiting_for_another_writer_gets_its_turn(server):
    """The acknowledgement reads its alert while another writer holds the lock, then that writer commits:
    a transaction that began deferred would now fail at once (its snapshot is stale); one that takes
    the lock as it begins waits for its turn."""
    first, second = (
        seed_alert(server.db_url, "regression:first"),
        seed_alert(server.db_url, "regression:second"),
    )
    with server.client() as client, ThreadPoolExecutor(max_workers=1) as pool:
        with write_lock_held(server.db_url, commit=True) as conn:
            pending = pool.submit(
                client.post, f"/api/v1/alerts/{first}/status", json={"status": "acknowledged"}
            )
            time.sleep(1)  # time for the request to reach its read (the assertions hold either way)
            conn.execute(f"UPDATE alerts SET title = 'rht slower' WHERE id = {second}")
        answer = pending.result()
        assert answer.status_code == 200, answer.text
        assert client.get(f"/api/v1/alerts/{second}").json()["title"] == "rht slower"
    assert answer.json()["status"] == "acknowledged"


def test_requests_that_find_every_connection_in_use_answer_503(db_url, tmp_path, monkeypatch):
    """More writers than the service may open connections, while another writer holds the lock: those
    without a connection wait as long as a lock wait and answer 503 too, none 500; then all get through."""
    monkeypatch.setenv("TEWATCH_LOCK_WAIT_SECONDS", "2")
    monkeypatch.setenv("TEWATCH_DATABASE_CONNECTIONS", "2")
    monkeypatch.setenv("TEWATCH_WEBHOOK_WORKER", "false")
    alert_ids = [seed_alert(db_url, f"regression:pool-{n}") for n in range(6)]
    server = start_server(db_url, tmp_path / "serve.log")
    answers = Answers()

    def acknowledge(alert_id: int) -> int:
        with server.client() as client:
            change = {"status": "acknowledged"}
            return answers.note("acknowledge", client.post(f"/api/v1/alerts/{alert_id}/status", json=change))

    try:
        with write_lock_held(server.db_url), ThreadPoolExecutor(max_workers=len(alert_ids)) as pool:
            codes = list(pool.map(acknowledge, alert_ids))
        assert codes == [503] * len(alert_ids), answers.codes
        assert answers.busy_without_retry_after == 0
        with ThreadPoolExecutor(max_workers=len(alert_ids)) as pool:
            assert list(pool.map(acknowledge, alert_ids)) == [200] * len(alert_ids), answers.codes
    finally:
        stop_server(server)

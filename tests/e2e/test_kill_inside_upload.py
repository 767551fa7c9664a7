"""kill -9 inside an upload's write transaction, on purpose: a real `tewatch serve` started with the
test-only pause (tewatch.ingest.pause_point) stops inside the transaction and says so; the test checks
from outside that the transaction is open and holds the write lock, kills the process with SIGKILL, starts
the service again on the same database and finds nothing half-stored: no run without its results, every
table as before, and the same upload, sent again, stored once. Each pause point is one trial, on SQLite
and on PostgreSQL; the trials that hit the transaction go to test-output/kill-inside-upload.json and the
end of the pytest summary.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from sqlalchemy import make_url, text

from tests.conftest import REPO_ROOT, LiveServer, start_server, stop_server
from tests.uploads import parts_of, post_run, tiny_run
from tewatch.ingest.pause_point import POINT_VARIABLE, POINTS, SIGNAL_VARIABLE
from tewatch.store.engine.database import make_engine

pytestmark = pytest.mark.long_running

SIGNAL_WAIT_S = 120
TRIALS: Counter[str] = Counter()  # backend -> trials
HITS: Counter[str] = Counter()  # backend -> trials whose kill landed inside the open write transaction
COUNTS_FILE = REPO_ROOT / "test-output" / "kill-inside-upload.json"


def backend_of(db_url: str) -> str:
    return make_url(db_url).get_backend_name()


def wait_for_file(path: Path, upload, timeout: float) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists():
            return json.loads(path.read_text())
        if upload.done():
            pytest.fail(f"the upload ended without pausing: {upload.result()!r}")
        time.sleep(0.05)
    pytest.fail(f"no pause signal within {timeout} s")


def write_transaction_open(db_url: str) -> bool:
    """Whether another connection holds an open write transaction: SQLite's write lock cannot be taken,
    or PostgreSQL shows a backend idle in a transaction that has written (it has a transaction id)."""
    url = make_url(db_url)
    if url.get_backend_name() == "sqlite":
        conn = sqlite3.connect(url.database, timeout=0, isolation_level=None)
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            return "locked" in str(exc)
        else:
            conn.execute("ROLLBACK")
            return False
        finally:
            conn.close()
    engine = make_engine(db_url)
    try:
        with engine.connect() as conn:
            return conn.execute(text(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                " AND pid <> pg_backend_pid() AND state = 'idle in transaction' AND backend_xid IS NOT NULL"
            )).scalar_one() >= 1  # fmt: skip
    finally:
        engine.dispose()


def run_visible(db_url: str, run_id: int) -> bool:
    engine = make_engine(db_url)
    try:
        with engine.connect() as conn:
            return (
                conn.execute(text("SELECT count(*) FROM runs WHERE id = :id"), {"id": run_id}).scalar_one()
                > 0
            )
    finally:
        engine.dispose()


def runs_missing_rows(server: LiveServer) -> list[tuple[int, str]]:
    """(run, what it lacks) for every run without results, verdicts or files."""
    engine = make_engine(server.db_url)
    missing = []
    try:
        with engine.connect() as conn:
            for table in ("results", "verdicts", "run_files"):
                orphans = conn.execute(text(
                    f"SELECT id FROM runs WHERE NOT EXISTS (SELECT 1 FROM {table} t WHERE t.run_id = runs.id)"
                )).scalars()  # fmt: skip
                missing += [(run_id, table) for run_id in orphans]
    finally:
        engine.dispose()
    return missing


def stored_counts(server: LiveServer) -> dict[str, int]:
    """Rows of every table an upload writes (each start of the service adds a token: not counted)."""
    counts = server.counts()
    counts.pop("api_tokens")
    return counts


def test_a_kill_inside_the_upload_transaction_leaves_nothing_half_stored(db_url, tmp_path):
    backend = backend_of(db_url)
    server = start_server(db_url, tmp_path / "serve-0.log")
    with server.client() as client:  # a history to keep intact: one stored run
        assert post_run(client, parts_of(tiny_run(0)), branch="main").status_code == 201
    stop_server(server)
    for trial, point in enumerate(POINTS, start=1):
        TRIALS[backend] += 1
        parts, branch = parts_of(tiny_run(trial % 2)), f"kill-{point}"
        signal = tmp_path / f"paused-{trial}.json"
        before = stored_counts(server)
        paused = start_server(db_url, tmp_path / f"serve-{trial}-paused.log",
                              env={POINT_VARIABLE: point, SIGNAL_VARIABLE: str(signal)})  # fmt: skip
        with ThreadPoolExecutor(max_workers=1) as pool, paused.client() as client:
            upload = pool.submit(post_run, client, parts, branch=branch)
            try:
                where = wait_for_file(signal, upload, SIGNAL_WAIT_S)
                assert where["point"] == point and where["pid"] == paused.process.pid, where
                open_then = write_transaction_open(db_url)
                unseen_then = not run_visible(db_url, where["run_id"])
            finally:  # killed whatever happens: a paused service would hold its lock for good
                paused.process.kill()
                paused.process.wait(30)
            with pytest.raises(httpx.TransportError):
                upload.result(timeout=60)
        assert open_then and unseen_then, (
            f"{point}: write transaction open {open_then}, run unseen {unseen_then}"
        )
        HITS[backend] += 1

        server = start_server(db_url, tmp_path / f"serve-{trial}-again.log")
        try:
            assert stored_counts(server) == before, f"{point}: the killed upload left rows behind"
            assert runs_missing_rows(server) == []
            with server.client() as client:
                assert client.get("/api/v1/runs", params={"branch": branch}).json()["total"] == 0
                first, again = post_run(client, parts, branch=branch), post_run(client, parts, branch=branch)
                assert (first.status_code, again.status_code) == (201, 200), (first.text, again.text)
                assert first.json()["run_id"] == again.json()["run_id"]
                run_id = first.json()["run_id"]
                assert client.get("/api/v1/runs", params={"branch": branch}).json()["total"] == 1
                stored = client.get(f"/api/v1/runs/{run_id}/results", params={"limit": 1000})
                assert stored.status_code == 200, stored.text
                assert stored.json()["total"] == sum(first.json()["results"].values())
            assert runs_missing_rows(server) == []
            after = stored_counts(server)
            assert after["runs"] == before["runs"] + 1
            assert after["results"] - before["results"] == sum(first.json()["results"].values())
            assert after["verdicts"] - before["verdicts"] == sum(first.json()["verdicts"].values())
        finally:
            stop_server(server)
    assert HITS[backend] == TRIALS[backend] == len(POINTS)


@pytest.fixture(scope="module", autouse=True)
def report_trials(request):
    yield
    if not TRIALS:
        return
    COUNTS_FILE.parent.mkdir(exist_ok=True)
    counts = {backend: {"trials": TRIALS[backend], "inside_transaction": HITS[backend]} for backend in TRIALS}
    COUNTS_FILE.write_text(json.dumps(counts, indent=1) + "\n")
    plugins = request.config.pluginmanager
    reporter, capture = plugins.get_plugin("terminalreporter"), plugins.get_plugin("capturemanager")
    if reporter is None or capture is None:
        return
    with capture.global_and_fixture_disabled():
        reporter.write_line("")
        for backend, found in counts.items():
            reporter.write_line(f"kill -9 inside the upload transaction on {backend}: "
                                f"{found['inside_transaction']} of {found['trials']} trials")  # fmt: skip

"""Outages on a real `tewatch serve`: PostgreSQL stopped under it (a throwaway cluster of the test's own,
halted and resumed) answers 503 with Retry-After, never a 500 or a traceback, and `tewatch upload` started
during the outage lands every run once it is over; a client trickling its request head is cut off."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import PG_CLUSTER_SCRIPT, _postgres_binaries, start_server, stop_server
from tests.uploads import TINY, parts_of, post_run, tiny_run
from tewatch.store.engine.migrate import upgrade

pytestmark = pytest.mark.long_running

CLI = [sys.executable, "-c", "from tewatch.cli import main; main()"]


def cluster(action: str, folder: Path) -> str:
    done = subprocess.run(
        ["bash", str(PG_CLUSTER_SCRIPT), action, str(folder)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.fixture
def own_cluster() -> Iterator[tuple[Path, str]]:
    """A PostgreSQL cluster of this test's own (the shared one is never stopped): (folder, URL)."""
    if not _postgres_binaries():
        pytest.skip("no PostgreSQL binaries to start a cluster of the test's own")
    folder = Path(tempfile.mkdtemp(prefix="tewatch-outage-"))
    try:
        url = cluster("start", folder).splitlines()[-1]
        upgrade(url)
        yield folder, url
    finally:
        cluster("stop", folder)
        shutil.rmtree(folder, ignore_errors=True)


def test_postgresql_down_answers_503_and_an_upload_during_it_lands_afterwards(own_cluster, tmp_path):
    folder, url = own_cluster
    log = tmp_path / "serve.log"
    server = start_server(url, log, env={"TEWATCH_WEBHOOK_POLL_SECONDS": "0.2"})
    try:
        with server.client() as client:
            assert post_run(client, parts_of(tiny_run(0)), branch="main").status_code == 201
            cluster("halt", folder)
            answers = {
                "upload": post_run(client, parts_of(tiny_run(1)), branch="main"),
                "runs": client.get("/api/v1/runs"),
                "health": client.get("/api/v1/health"),
                "alerts": client.get("/api/v1/alerts"),
                "overview page": client.get("/"),
            }
            for what, answer in answers.items():
                assert answer.status_code == 503, (what, answer.status_code, answer.text[:300])
                assert int(answer.headers["retry-after"]) > 0, what
                assert "unavailable" in answer.json()["detail"], what
            assert "nothing was stored" in answers["upload"].json()["detail"]

            # a CI job uploads during the outage; the database comes back while it retries
            job = subprocess.Popen(
                [*CLI, "upload", str(TINY), "--url", server.url, "--token", server.token, "--branch", "main",
                 "--attempts", "10", "--retry-for", "240"],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            )  # fmt: skip
            assert job.stderr is not None
            first_retry = next(line for line in job.stderr if line.startswith("retrying in "))
            assert "HTTP 503: the store is unavailable" in first_retry, first_retry
            cluster("resume", folder)
            out, err = job.communicate(timeout=300)
            assert job.returncode == 0, first_retry + err
            assert " already stored: " in out.splitlines()[0] and " created: " in out.splitlines()[1], out
            assert "detection after 2 runs: " in err

            runs = client.get("/api/v1/runs").json()
            assert runs["total"] == 2  # nothing lost, nothing twice
    finally:
        stop_server(server)
    served = log.read_text()
    assert "Traceback" not in served and "answered 503: the database server cannot be reached" in served


def trickle_head(address: tuple[str, int], first_request: bytes) -> tuple[bytes, int]:
    """On one connection: `first_request` (its answer read), then a request head a byte every 0.25 s
    (250 s if the service waited for all of it): what came back after it ("(reset)" appended where the
    connection was reset), and how many bytes went."""
    with socket.create_connection(address, timeout=60) as slow:
        if first_request:
            slow.sendall(first_request)
            answered = b""
            while not (b"\r\n\r\n" in answered and answered.endswith(b"}")):
                chunk = slow.recv(4096)
                assert chunk, answered
                answered += chunk
            assert answered.startswith(b"HTTP/1.1 200 ")
        slow.sendall(b"GET /api/v1/health HTTP/1.1\r\n")
        sent, answer = 0, b""
        header = b"X-Slow: " + b"a" * 1000
        while sent < len(header):
            try:
                slow.sendall(header[sent : sent + 1])
            except OSError:
                break
            sent += 1
            slow.settimeout(0.25)
            try:
                chunk = slow.recv(4096)
            except TimeoutError:
                continue
            except ConnectionResetError:  # closed with our bytes unread: the kernel may reset, not end
                return answer + b"(reset)", sent
            answer += chunk
            if not chunk or answer:
                break
        slow.settimeout(30)
        try:
            while chunk := slow.recv(4096):
                answer += chunk
        except ConnectionResetError:
            answer += b"(reset)"
    return answer, sent


def test_a_client_trickling_its_request_head_is_cut_off(db_url, tmp_path):
    """On a fresh connection, and on one that has had an answer already (keep-alive)."""
    server = start_server(db_url, tmp_path / "serve.log", env={"TEWATCH_REQUEST_HEAD_SECONDS": "2"})
    try:
        host, port = server.url.removeprefix("http://").split(":")
        for first_request in (b"", b"GET /api/v1/health HTTP/1.1\r\nHost: tewatch\r\n\r\n"):
            answer, sent = trickle_head((host, int(port)), first_request)
            # the 408, unless the reset of the close overtook it; either way cut off long before the head ended
            assert answer.startswith(b"HTTP/1.1 408 ") or answer == b"(reset)", answer
            assert sent < 1000
        with server.client() as client:  # the service itself answers as ever
            assert client.get("/api/v1/health").status_code == 200
    finally:
        stop_server(server)

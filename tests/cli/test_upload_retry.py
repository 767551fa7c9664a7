"""`tewatch upload` retries transport errors, 5xx and 429 with backoff, never a 4xx, within its bounds.

A real `tewatch serve` sits behind a small threaded HTTP proxy that fails requests as a test scripts it:
503 or 429 from the proxy, the connection dropped before the request reaches the service, or dropped after
the service stored the upload (so the retry must be answered "already stored", never stored twice). The
command runs as a process (tests/served.py's run_cli), with a backoff of a few hundredths of a second."""

from __future__ import annotations

import json
import re
import subprocess
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from tests.conftest import served_sqlite
from tests.served import run_cli
from tests.uploads import TINY

FAST = ["--retry-wait", "0.01"]


class FlakyProxy:
    """Forwards to `upstream`, except that the n-th POST does what `script[n]` says: "503" or "429" (the
    proxy answers that itself, 429 with Retry-After: 0), "drop-before" (closes the connection before
    forwarding), "drop-after" (forwards, then closes without answering); POSTs past the script, and every
    other request, are forwarded. `always` replaces the script with one action for every POST."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream
        self.script: list[str] = []
        self.always: str | None = None
        self.posts: list[str] = []  # the action taken for each POST, in order
        self.lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:
                pass

            def do_GET(self) -> None:
                self._forward(b"")

            def do_POST(self) -> None:
                body = self._body()
                with proxy.lock:
                    n = len(proxy.posts)
                    action = proxy.always or (proxy.script[n] if n < len(proxy.script) else "pass")
                    proxy.posts.append(action)
                if action in ("503", "429"):
                    self._answer(
                        int(action),
                        {"detail": f"proxy says {action}"},
                        {"Retry-After": "0"} if action == "429" else {},
                    )
                elif action == "drop-before":
                    self.close_connection = True
                elif action == "drop-after":
                    proxy.send(self.command, self.path, self.headers, body)
                    self.close_connection = True
                else:
                    self._forward(body)

            def _body(self) -> bytes:
                if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                    chunks = []
                    while size := int(self.rfile.readline().split(b";")[0].strip(), 16):
                        chunks.append(self.rfile.read(size))
                        self.rfile.readline()
                    self.rfile.readline()
                    return b"".join(chunks)
                return self.rfile.read(int(self.headers.get("Content-Length") or 0))

            def _forward(self, body: bytes) -> None:
                answer = proxy.send(self.command, self.path, self.headers, body)
                self._answer(
                    answer.status_code, answer.content, {"Content-Type": answer.headers["content-type"]}
                )

            def _answer(self, status: int, body, headers: dict[str, str]) -> None:
                content = body if isinstance(body, bytes) else json.dumps(body).encode()
                self.send_response(status)
                headers = {"Content-Type": "application/json", **headers, "Content-Length": str(len(content))}
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(content)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def send(self, method: str, path: str, headers, body: bytes) -> httpx.Response:
        keep = {k: v for k, v in headers.items() if k.lower() in ("authorization", "content-type", "accept")}
        return httpx.request(method, self.upstream + path, headers=keep, content=body, timeout=60)

    def reset(self, script: list[str] | None = None, always: str | None = None) -> None:
        with self.lock:
            self.script, self.always, self.posts = list(script or []), always, []


@pytest.fixture(scope="module")
def service(tmp_path_factory) -> Iterator:
    with served_sqlite(tmp_path_factory.mktemp("retry")) as (server, _):
        yield server


@pytest.fixture
def proxy(service) -> Iterator[FlakyProxy]:
    flaky = FlakyProxy(service.url)
    flaky.thread.start()
    yield flaky
    flaky.server.shutdown()
    flaky.server.server_close()


def upload(proxy: FlakyProxy, token: str, *options: str) -> subprocess.CompletedProcess:
    return run_cli(
        ["upload", str(TINY), "--url", proxy.url, "--token", token, "--branch", "retry", *options],
        timeout=300,
    )


def test_failed_tries_are_retried_and_the_upload_lands_exactly_once(service, proxy):
    """TINY holds two runs: the first meets every kind of failure once, the last of them after the service
    stored it; the second goes through at once."""
    proxy.reset(["503", "drop-before", "429", "drop-after"])
    before = service.counts()
    done = upload(proxy, service.token, "--attempts", "6", *FAST)
    assert done.returncode == 0, done.stderr
    # the last is detection after both runs, the one the service stored before the connection dropped included
    assert proxy.posts == ["503", "drop-before", "429", "drop-after", "pass", "pass", "pass"]
    assert "detection after 2 runs: " in done.stderr
    first, second = done.stdout.strip().splitlines()
    assert " already stored: " in first and first.endswith("(after 5 tries)"), first
    assert " created: " in second and "tries" not in second, second
    retries = [line for line in done.stderr.splitlines() if line.startswith("retrying in ")]
    assert [line.split(": ", 1)[1] for line in retries] == [
        "HTTP 503: proxy says 503",
        "RemoteProtocolError: Server disconnected without sending a response.",
        "HTTP 429: proxy says 429",
        "RemoteProtocolError: Server disconnected without sending a response.",
    ]
    after = service.counts()
    # each run once, though the first reached the service twice: 14 results each
    assert (after["runs"] - before["runs"], after["results"] - before["results"]) == (2, 28)


def test_a_4xx_is_not_retried(service, proxy):
    proxy.reset()
    done = upload(proxy, "not-a-token", "--attempts", "5", *FAST)
    assert done.returncode == 1
    assert proxy.posts == ["pass", "pass"]  # one try per run
    assert done.stderr.count("HTTP 401: unknown or revoked token") == 2 and "retrying" not in done.stderr


def test_retries_stop_after_the_attempts_given(service, proxy):
    proxy.reset(always="503")
    before = service.counts()["runs"]
    done = upload(proxy, service.token, "--attempts", "3", *FAST)
    assert done.returncode == 1 and "2 of 2 uploads failed" in done.stderr
    assert proxy.posts == ["503"] * 6
    assert done.stderr.count("HTTP 503: proxy says 503 (after 3 tries)") == 2
    assert service.counts()["runs"] == before


def test_retries_stop_after_the_time_given(service, proxy):
    """Backoff 0.05, 0.1, 0.2, 0.4 s ... (plus jitter): within 0.5 s of the first try, about 4 tries."""
    proxy.reset(always="503")
    start = time.monotonic()
    done = upload(proxy, service.token, "--attempts", "100", "--retry-for", "0.5", "--retry-wait", "0.05")
    elapsed = time.monotonic() - start
    assert done.returncode == 1
    tries = len(proxy.posts) / 2
    assert 2 <= tries <= 8, proxy.posts
    assert elapsed < 60


def test_no_retry_starts_past_the_time_given(service, proxy):
    """Waits of 0.3-0.6, 0.6-0.9, 1.2-1.5 s: a third retry would start past 1 s, so none is scheduled."""
    proxy.reset(always="503")
    done = upload(proxy, service.token, "--attempts", "100", "--retry-for", "1", "--retry-wait", "0.3")
    assert done.returncode == 1
    lines = done.stderr.splitlines()
    ends = [i for i, line in enumerate(lines) if line.startswith("error: ")][:2]
    for start, end in zip([-1, ends[0]], ends, strict=True):  # each results file's own retries
        waits = [
            float(re.match(r"retrying in (\d+\.\d+) s", line).group(1))
            for line in lines[start + 1 : end]
            if line.startswith("retrying in ")
        ]
        assert 1 <= len(waits) <= 2 and sum(waits) <= 1.0, lines


def test_the_detection_after_a_batch_is_retried_too(service, proxy):
    """Both runs land; the detection call after them meets a 503 and a dropped connection, and is sent
    again until it goes through: the job ends well, with the detection done."""
    proxy.reset(["pass", "pass", "503", "drop-before"])
    done = upload(proxy, service.token, "--attempts", "4", *FAST)
    assert done.returncode == 0, done.stderr
    assert proxy.posts == ["pass", "pass", "503", "drop-before", "pass"]
    retries = [line.split(": ", 1)[1] for line in done.stderr.splitlines() if line.startswith("retrying in ")]
    assert retries == [
        "HTTP 503: proxy says 503",
        "RemoteProtocolError: Server disconnected without sending a response.",
    ]
    assert "detection after 2 runs: " in done.stderr and "error" not in done.stderr


def test_a_detection_that_keeps_failing_fails_the_job_naming_it(service, proxy):
    proxy.reset(["pass", "pass", "503", "503"])
    done = upload(proxy, service.token, "--attempts", "2", *FAST)
    assert done.returncode == 1
    assert "error: detection after 2 runs: HTTP 503: proxy says 503 (after 2 tries)" in done.stderr
    assert "the runs are stored, detection after them failed" in done.stderr

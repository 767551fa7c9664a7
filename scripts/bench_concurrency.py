"""Writers at once against a real `tewatch serve`: 16 uploaders sending real H200 runs (the quick profile
of tests/fixtures/h200-quick, 141 cases, each upload its own commit on its uploader's branch, detection
after every upload), two clients acknowledging every correctness alert as it opens, and one asking for
branch detection over and over, on SQLite and on PostgreSQL. Prints, per backend and operation, the
answers by status and the latency of each request (p50, p95, max) as its client saw it.

    .venv/bin/python scripts/bench_concurrency.py                          # SQLite and PostgreSQL
    .venv/bin/python scripts/bench_concurrency.py --backend sqlite --uploads 2   # a quick look

PostgreSQL is $TEWATCH_TEST_POSTGRES_URL (a role that may create databases; a fresh database is made in
it), else a throwaway cluster from scripts/pg-test-cluster.sh.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import tempfile
import threading
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from rich.console import Console
from rich.table import Table
from sqlalchemy import make_url

from tewatch.campaign.service_process import ServiceProcess
from tewatch.ingest.discover import find_runs
from tewatch.store.engine.database import make_engine
from tewatch.store.engine.migrate import upgrade
from tewatch.store.schema.models import TokenScope
from tewatch.store.writes.tokens import create_token

REPO_ROOT = Path(__file__).resolve().parent.parent
FIXTURE = REPO_ROOT / "tests" / "fixtures" / "h200-quick"
PG_CLUSTER = REPO_ROOT / "scripts" / "pg-test-cluster.sh"
DEADLINE_S = 900
ACKNOWLEDGERS = 2


@dataclass
class Answers:
    """Every answer's status and latency, per operation."""

    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    codes: dict[str, Counter] = field(default_factory=lambda: defaultdict(Counter))
    lock: threading.Lock = field(default_factory=threading.Lock)
    alerts: Counter = field(default_factory=Counter)  # the alerts at the end, by status

    def timed(self, operation: str, send, *args, **kwargs) -> httpx.Response:
        start = time.perf_counter()
        answer = send(*args, **kwargs)
        elapsed = time.perf_counter() - start
        with self.lock:
            self.latencies[operation].append(elapsed)
            self.codes[operation][answer.status_code] += 1
        return answer


class Uploads:
    """The fixture run's multipart parts, its results file rewritten to one commit per upload."""

    def __init__(self, fixture: Path) -> None:
        [run] = find_runs(fixture)
        self.parts = [(part, path.name, path.read_bytes()) for part, path in run.parts()]
        self.result = json.loads(next(content for part, _, content in self.parts if part == "result"))

    def files(self, uploader: int, index: int) -> list[tuple[str, tuple[str, bytes, str]]]:
        result = {
            **self.result,
            "commit_hash": hashlib.sha1(f"{uploader}-{index}".encode()).hexdigest(),
            "date": self.result["date"] + index * 3_600_000,
        }
        files = []
        for part, name, content in self.parts:
            if part == "result":
                content = json.dumps(result).encode()
            files.append((part, (name, content, "application/octet-stream")))
        return files


def upload_all(url: str, token: str, answers: Answers, uploads: Uploads, uploader: int, count: int,
               deadline: float) -> None:  # fmt: skip
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=url, headers=headers, timeout=300) as client:
        for index in range(count):
            files, fields = uploads.files(uploader, index), {"branch": f"load-{uploader}"}
            while time.monotonic() < deadline:
                answer = answers.timed("upload", client.post, "/api/v1/runs", files=files, data=fields)
                if answer.status_code != 503:
                    break
                time.sleep(float(answer.headers.get("retry-after", "1")))


def acknowledge_all(url: str, token: str, answers: Answers, uploads_done: threading.Event, worker: int,
                    deadline: float) -> None:  # fmt: skip
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=url, headers=headers, timeout=300) as client:
        while time.monotonic() < deadline:
            finished = uploads_done.is_set()
            alerts = client.get("/api/v1/alerts", params={"status": "open", "limit": 1000}).json()
            for alert in alerts[worker::ACKNOWLEDGERS]:
                change = {"status": "acknowledged", "actor": "oncall"}
                answers.timed("acknowledge", client.post, f"/api/v1/alerts/{alert['id']}/status", json=change)
            if finished and not alerts:
                return
            time.sleep(0.2)


def detect_until(
    url: str, token: str, answers: Answers, uploads_done: threading.Event, branches: int
) -> None:
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=url, headers=headers, timeout=300) as client:
        for round_ in range(10**9):
            if uploads_done.is_set():
                return
            branch = f"load-{round_ % branches}"
            answers.timed("detect", client.post, "/api/v1/detect", json={"branch": branch})


def run_load(database_url: str, work: Path, uploaders: int, per_uploader: int) -> tuple[Answers, float]:
    upgrade(database_url)
    engine = make_engine(database_url)
    token = create_token(engine, "bench", TokenScope.upload)
    engine.dispose()
    uploads = Uploads(FIXTURE)
    answers = Answers()
    uploads_done = threading.Event()
    deadline = time.monotonic() + DEADLINE_S
    with ServiceProcess(
        database_url, work / "service.log", env={"TEWATCH_WEBHOOK_WORKER": "false"}
    ) as service:
        start = time.perf_counter()
        with ThreadPoolExecutor(max_workers=uploaders + ACKNOWLEDGERS + 1) as pool:
            helpers = [pool.submit(acknowledge_all, service.url, token, answers, uploads_done, w, deadline)
                       for w in range(ACKNOWLEDGERS)]  # fmt: skip
            helpers.append(pool.submit(detect_until, service.url, token, answers, uploads_done, uploaders))
            for future in [pool.submit(upload_all, service.url, token, answers, uploads, n, per_uploader, deadline)
                           for n in range(uploaders)]:  # fmt: skip
                future.result()
            uploads_done.set()
            for future in helpers:
                future.result()
        wall = time.perf_counter() - start
        with httpx.Client(base_url=service.url, timeout=300) as client:
            alerts = client.get("/api/v1/alerts", params={"limit": 1000}).json()
    answers.alerts = Counter(alert["status"] for alert in alerts)
    return answers, wall


@contextmanager
def postgres_database(work: Path) -> Iterator[str]:
    """A fresh database in $TEWATCH_TEST_POSTGRES_URL's server, else in a throwaway cluster."""
    import psycopg

    server_url, cluster = os.environ.get("TEWATCH_TEST_POSTGRES_URL"), None
    if not server_url:
        cluster = work / "pg"
        started = subprocess.run(["bash", str(PG_CLUSTER), "start", str(cluster)], capture_output=True, text=True,
                                 check=True)  # fmt: skip
        server_url = started.stdout.strip().splitlines()[-1]
    admin = make_url(server_url).set(drivername="postgresql").render_as_string(hide_password=False)
    name = f"bench_{uuid.uuid4().hex[:10]}"
    try:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        yield make_url(server_url).set(database=name).render_as_string(hide_password=False)
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        if cluster:
            subprocess.run(["bash", str(PG_CLUSTER), "stop", str(cluster)], check=False)


def quantile(values: list[float], q: float) -> float:
    return (
        statistics.quantiles(values, n=100, method="inclusive")[round(q * 100) - 1]
        if len(values) > 1
        else values[0]
    )


def add_rows(table: Table, backend: str, answers: Answers, wall: float) -> None:
    for operation in ("upload", "acknowledge", "detect"):
        latencies, codes = answers.latencies.get(operation, []), answers.codes.get(operation, Counter())
        if not latencies:
            table.add_row(backend, operation, "0", *["-"] * 7)
            continue
        ok = sum(n for code, n in codes.items() if 200 <= code < 300)
        four = sum(n for code, n in codes.items() if 400 <= code < 500)
        busy = codes.get(503, 0)
        five = sum(n for code, n in codes.items() if code >= 500) - busy
        table.add_row(
            backend, operation, str(len(latencies)), str(ok), str(four), str(busy), str(five),
            f"{statistics.median(latencies):.2f}", f"{quantile(latencies, 0.95):.2f}", f"{max(latencies):.2f}",
        )  # fmt: skip
    table.add_row(backend, "(wall)", "", "", "", "", "", "", "", f"{wall:.1f}", end_section=True)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--backend", choices=["sqlite", "postgresql", "both"], default="both")
    parser.add_argument("--uploaders", type=int, default=16)
    parser.add_argument("--uploads", type=int, default=8, help="uploads per uploader")
    args = parser.parse_args()
    console = Console(width=max(Console().width, 110))
    table = Table(title=f"{args.uploaders} uploaders x {args.uploads} uploads of {FIXTURE.name}, "
                        f"{ACKNOWLEDGERS} acknowledgers, branch detection, one `tewatch serve`")  # fmt: skip
    for column in ("backend", "operation", "requests", "2xx", "4xx", "503", "other 5xx"):
        table.add_column(column, justify="left" if column in ("backend", "operation") else "right")
    for column in ("p50 s", "p95 s", "max s"):
        table.add_column(column, justify="right")
    backends = ["sqlite", "postgresql"] if args.backend == "both" else [args.backend]
    alerts: dict[str, Counter] = {}
    with tempfile.TemporaryDirectory(prefix="tewatch-concurrency-") as tmp:
        work = Path(tmp)
        for backend in backends:
            console.print(f"[bold]{backend}[/]: {args.uploaders * args.uploads} uploads ...")
            if backend == "sqlite":
                answers, wall = run_load(
                    f"sqlite:///{work / 'tewatch.sqlite3'}", work, args.uploaders, args.uploads
                )
            else:
                with postgres_database(work) as url:
                    answers, wall = run_load(url, work, args.uploaders, args.uploads)
            add_rows(table, backend, answers, wall)
            alerts[backend] = answers.alerts
    console.print(table)
    for backend, statuses in alerts.items():
        console.print(
            f"{backend}: alerts at the end " + ", ".join(f"{n} {s}" for s, n in sorted(statuses.items()))
        )


if __name__ == "__main__":
    main()

"""What a hostile reader costs a real `tewatch serve`, for one or more source trees side by side (e.g.
main's code and this one's): each tree's service on a fresh store, then, in order,

0. the H200 full profile's 226 cases under 8 GPU models (tests/fixtures/h200-full), for the overview to
   list, and one series of 3,000,000 samples (four uploads of 750,000, each under the upload limit);
1. 64 cache-busting readers: `GET /?all=1&m=K`, K = 0..63, eight at a time, and the memory kept after;
2. that series read once each as `GET /api/v1/series/{id}`, `/series/{id}/plot.svg` and `?last=all`;
3. six readers of that series (plot, API answer) beside two uploaders adding runs to it, a bounded
   number of requests each.

Prints per tree and phase: answers by status, latency p50/p95/max as the client saw it, the bytes of the
largest answer, the service's peak RSS during the phase (its high-water mark, reset before each phase),
its RSS after, and what the phase added to it (kept). A request gets `--timeout` seconds; a service
past `--rss-limit-mb` is killed, and what was left unanswered is counted as such (the machine is
shared: no phase may take it all).

    .venv/bin/python scripts/bench_bounds.py --tree before=/work/wt-main --tree after=.
    .venv/bin/python scripts/bench_bounds.py --tree after=. --database-url postgresql://...   # PostgreSQL

A tree is a checkout of this repository: its service/ and dashboards/ run the service; the store is
migrated by that service. PostgreSQL: a role that may create databases (a fresh database per tree).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import httpx
from rich.console import Console
from rich.table import Table
from sqlalchemy import make_url

from tewatch.campaign.service_process import free_port
from tewatch.ingest.discover import find_runs

REPO_ROOT = Path(__file__).resolve().parent.parent
FIXTURE = REPO_ROOT / "tests" / "fixtures" / "asv-tiny" / "results"
CASES = REPO_ROOT / "tests" / "fixtures" / "h200-full"  # 226 cases: what the overview's pages list
TIMED = "ops.Scale.time_scale"
SAMPLES_COLUMN = 11  # of asv's result_columns
PHASES = ("cache busting", "heavy series", "readers + uploaders")


@dataclass
class Phase:
    latencies: list[float] = field(default_factory=list)
    codes: Counter = field(default_factory=Counter)
    largest: int = 0
    rss_before_mb: float = 0.0
    peak_rss_mb: float = 0.0
    rss_after_mb: float = 0.0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def timed(self, send: Callable[[], httpx.Response]) -> httpx.Response | None:
        start = time.perf_counter()
        try:
            answer = send()
            code: int | str = answer.status_code
        except httpx.TimeoutException:
            answer, code = None, "timeout"
        except httpx.TransportError:
            answer, code = None, "no answer"
        elapsed = time.perf_counter() - start
        with self.lock:
            self.latencies.append(elapsed)
            self.codes[code] += 1
            if answer is not None:
                self.largest = max(self.largest, len(answer.content))
        return answer


class Service:
    """`tewatch serve` from `tree` on `database_url`, with its peak RSS watched and bounded."""

    def __init__(self, tree: Path, database_url: str, log: Path, rss_limit_mb: int) -> None:
        self.tree, self.database_url, self.log, self.rss_limit_mb = tree, database_url, log, rss_limit_mb
        self.url = ""
        self.process: subprocess.Popen | None = None
        self.killed_for_memory = False
        self._watching = threading.Event()

    def __enter__(self) -> Service:
        port = free_port()
        self.url = f"http://127.0.0.1:{port}"
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("TEWATCH_")},
            "PYTHONPATH": f"{self.tree / 'service'}:{self.tree / 'dashboards'}",
            "TEWATCH_WEBHOOK_WORKER": "false",
        }
        command = [sys.executable, "-m", "tewatch", "serve", "--host", "127.0.0.1", "--port", str(port),
                   "--db", self.database_url, "--log-level", "warning"]  # fmt: skip
        self.process = subprocess.Popen(
            command, stdout=self.log.open("ab"), stderr=subprocess.STDOUT, env=env
        )
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"tewatch serve exited; see {self.log}")
            try:
                if httpx.get(f"{self.url}/api/v1/health", timeout=2).is_success:
                    break
            except httpx.HTTPError:
                time.sleep(0.2)
        threading.Thread(target=self._guard, daemon=True).start()
        return self

    def _guard(self) -> None:
        while self.process is not None and self.process.poll() is None:
            if self.rss_mb("VmRSS") > self.rss_limit_mb:
                self.killed_for_memory = True
                self.process.kill()
            time.sleep(0.05)

    def rss_mb(self, field_name: str = "VmRSS") -> float:
        try:
            status = Path(f"/proc/{self.process.pid}/status").read_text()  # type: ignore[union-attr]
        except OSError:
            return 0.0
        for line in status.splitlines():
            if line.startswith(field_name + ":"):
                return int(line.split()[1]) / 1024
        return 0.0

    def reset_peak(self) -> None:
        """Start the high-water mark of the service's RSS again (Linux: 5 > /proc/PID/clear_refs)."""
        Path(f"/proc/{self.process.pid}/clear_refs").write_text("5")  # type: ignore[union-attr]

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def __exit__(self, *exc: object) -> None:
        if self.alive():
            self.process.terminate()  # type: ignore[union-attr]
            try:
                self.process.wait(timeout=15)  # type: ignore[union-attr]
            except subprocess.TimeoutExpired:
                self.process.kill()  # type: ignore[union-attr]


class Uploads:
    """The tiny fixture's run, rewritten to one commit per upload and `samples` samples in one result."""

    def __init__(self) -> None:
        run = find_runs(FIXTURE)[0]
        self.parts = [(part, path.name, path.read_bytes()) for part, path in run.parts()]
        self.result = json.loads(next(content for part, _, content in self.parts if part == "result"))

    def files(self, key: str, index: int, samples: int) -> list[tuple[str, tuple[str, bytes, str]]]:
        result = json.loads(json.dumps(self.result))
        result["commit_hash"] = hashlib.sha1(f"{key}-{index}".encode()).hexdigest()
        result["date"] = self.result["date"] + index * 3_600_000
        if samples:
            result["results"][TIMED][SAMPLES_COLUMN][0] = [1e-4 + (i % 977) * 1e-8 for i in range(samples)]
        files = []
        for part, name, content in self.parts:
            if part == "result":
                name, content = result["commit_hash"][:8] + name[8:], json.dumps(result).encode()
            files.append((part, (name, content, "application/octet-stream")))
        return files


def overview_files(gpu: int) -> list[tuple[str, tuple[str, bytes, str]]]:
    """The H200 full profile's run as if measured on GPU model number `gpu`: 226 cases of their own."""
    [run] = find_runs(CASES)
    files = []
    for part, path in run.parts():
        content = path.read_bytes()
        if part == "machine":
            content = json.dumps({**json.loads(content), "gpu_model": f"NVIDIA H200 v{gpu}"}).encode()
        elif part == "run":
            record = json.loads(content)
            content = json.dumps(
                {**record, "gpu": {**record["gpu"], "model": f"NVIDIA H200 v{gpu}"}}
            ).encode()
        files.append((part, (path.name, content, "application/octet-stream")))
    return files


def create_token(tree: Path, database_url: str) -> str:
    """A token made by the tree's own `tewatch token create` (its store, its migrations)."""
    env = {**os.environ, "PYTHONPATH": f"{tree / 'service'}:{tree / 'dashboards'}"}
    made = subprocess.run([sys.executable, "-m", "tewatch", "token", "create", "--db", database_url, "--name",
                           "bench"], capture_output=True, text=True, env=env, check=True)  # fmt: skip
    return made.stdout.strip().splitlines()[-1].strip()


def measure_tree(tree: Path, database_url: str, work: Path, args: argparse.Namespace) -> dict[str, Phase]:
    phases = {name: Phase() for name in PHASES}
    uploads = Uploads()
    with Service(tree, database_url, work / f"serve-{tree.name}.log", args.rss_limit_mb) as service:
        token = create_token(tree, database_url)
        headers = {"Authorization": f"Bearer {token}"}
        limits = httpx.Timeout(args.timeout, connect=10)
        with httpx.Client(base_url=service.url, headers=headers, timeout=600) as client:
            for gpu in range(args.overview_gpus):
                client.post(
                    "/api/v1/runs", files=overview_files(gpu), data={"branch": "main"}
                ).raise_for_status()
            per_upload = args.samples // args.heavy_uploads
            for i in range(args.heavy_uploads):
                answer = client.post("/api/v1/runs", files=uploads.files("heavy", i, per_upload),
                                     data={"branch": "heavy"})  # fmt: skip
                answer.raise_for_status()
            cases = client.get("/api/v1/cases", params={"gpu": "cpu", "limit": 1000}).json()["items"]
        [series_id] = [s["id"] for c in cases for s in c["series"] if s["benchmark"] == TIMED
                       and c["params"].get("backend") == "torch-ref" and c["params"].get("rank") == 2]  # fmt: skip
        reads = [f"/api/v1/series/{series_id}?branch=heavy", f"/series/{series_id}/plot.svg?branch=heavy",
                 f"/series/{series_id}/plot.svg?branch=heavy&last=all"]  # fmt: skip

        def phase(name: str, run: Callable[[Phase, httpx.Client], None]) -> None:
            if not service.alive():
                return
            service.reset_peak()
            phases[name].rss_before_mb = service.rss_mb("VmRSS")
            with httpx.Client(base_url=service.url, headers=headers, timeout=limits) as client:
                run(phases[name], client)
            phases[name].peak_rss_mb = service.rss_mb("VmHWM")
            phases[name].rss_after_mb = service.rss_mb("VmRSS")
            if service.killed_for_memory:
                phases[name].codes[f"killed at {args.rss_limit_mb} MB"] += 1

        def heavy(p: Phase, client: httpx.Client) -> None:
            for path in reads:
                p.timed(partial(client.get, path))

        def cache_busting(p: Phase, client: httpx.Client) -> None:
            with ThreadPoolExecutor(max_workers=8) as pool:
                busting = [
                    partial(client.get, "/", params={"all": "1", "m": k}) for k in range(args.cache_readers)
                ]
                list(pool.map(p.timed, busting))

        def mixed(p: Phase, client: httpx.Client) -> None:
            def reader(n: int) -> None:
                for i in range(args.reads_each):
                    p.timed(partial(client.get, reads[(n + i) % 2]))

            def uploader(n: int) -> None:
                for i in range(args.uploads_each):
                    files = uploads.files(f"up{n}", 100 + i, 0)
                    p.timed(partial(client.post, "/api/v1/runs", files=files, data={"branch": "heavy"}))

            with ThreadPoolExecutor(max_workers=args.readers + 2) as pool:
                futures = [pool.submit(reader, n) for n in range(args.readers)]
                futures += [pool.submit(uploader, n) for n in range(2)]
                for future in futures:
                    future.result()

        for name, run in zip(PHASES, (cache_busting, heavy, mixed), strict=True):
            phase(name, run)
    return phases


@contextmanager
def fresh_database(base_url: str | None, work: Path, tree_name: str) -> Iterator[str]:
    if not base_url:
        yield f"sqlite:///{work / f'{tree_name}.sqlite3'}"
        return
    import psycopg

    admin = make_url(base_url).set(drivername="postgresql").render_as_string(hide_password=False)
    name = f"bench_bounds_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield make_url(base_url).set(database=name).render_as_string(hide_password=False)
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def quantile(values: list[float], q: float) -> float:
    if len(values) < 2:
        return values[0] if values else float("nan")
    return statistics.quantiles(values, n=100, method="inclusive")[round(q * 100) - 1]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tree", action="append", required=True, help="NAME=PATH of a checkout")
    parser.add_argument("--database-url", help="PostgreSQL server URL (default: a SQLite file per tree)")
    parser.add_argument("--samples", type=int, default=3_000_000)
    parser.add_argument("--heavy-uploads", type=int, default=4)
    parser.add_argument("--cache-readers", type=int, default=64)
    parser.add_argument(
        "--overview-gpus", type=int, default=8, help="copies of the 226 cases the overview lists"
    )
    parser.add_argument("--readers", type=int, default=6)
    parser.add_argument("--reads-each", type=int, default=3)
    parser.add_argument("--uploads-each", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds a request may take")
    parser.add_argument("--rss-limit-mb", type=int, default=6000)
    args = parser.parse_args()
    trees = dict(spec.split("=", 1) for spec in args.tree)
    results: dict[str, dict[str, Phase]] = defaultdict(dict)
    with tempfile.TemporaryDirectory(prefix="bench-bounds-") as tmp:
        work = Path(tmp)
        for name, path in trees.items():
            with fresh_database(args.database_url, work, name) as url:
                results[name] = measure_tree(Path(path).resolve(), url, work, args)
    backend = "PostgreSQL" if args.database_url else "SQLite"
    table = Table(
        title=f"tewatch serve under hostile reads ({backend}, {args.samples:,} samples in one series)"
    )
    for column in ("phase", "tree", "answers", "p50 s", "p95 s", "max s", "largest answer", "peak RSS MB",
                   "RSS after MB", "RSS kept MB"):  # fmt: skip
        table.add_column(column, justify="left" if column in ("phase", "tree", "answers") else "right")
    for phase in PHASES:
        for name in trees:
            p = results[name][phase]
            answers = ", ".join(f"{code}: {n}" for code, n in sorted(p.codes.items(), key=str)) or "not run"
            table.add_row(phase, name, answers, f"{quantile(p.latencies, 0.5):.2f}",
                          f"{quantile(p.latencies, 0.95):.2f}", f"{max(p.latencies, default=float('nan')):.2f}",
                          f"{p.largest / 1e6:.1f} MB", f"{p.peak_rss_mb:.0f}", f"{p.rss_after_mb:.0f}",
                          f"{p.rss_after_mb - p.rss_before_mb:+.0f}")  # fmt: skip
    Console(width=160).print(table)


if __name__ == "__main__":
    main()

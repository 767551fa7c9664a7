"""Dashboard benchmark: server time of every page with about 1,000,000 stored results.

Two histories (both about 1M results by default; --results 10000000 for the scale check):
  suites  the suites' shape (scripts/synthetic_history.py, bulk-written): quantize, RHT, GEMM, Linear and
          contract cases on three GPU models, ~1,550 commits of main per 1M results, version upgrades midway,
          pull requests 1 to 3 (the /pr/1 page); long series (~1,550 points per 1M results).
  wide    the store benchmark's uploads (scripts/bench_store.py): one ingested through the real ingest core,
          older runs of the same 5,000 cases of one class bulk-written as bench_store fills its history
          (100 runs per 1M results); the widest overview and matrix.

The service runs as a real uvicorn process on a loopback port; each page is requested `--requests` times
(ids rotated where a page takes one) after two warm-up requests, and the wall time of each request is kept.
Prints one table per history. Target: p95 < 300 ms for every page.

    .venv/bin/python scripts/bench_dashboard.py                    # both histories, 1M results each
    .venv/bin/python scripts/bench_dashboard.py --shape suites --results 200000   # quick look
    .venv/bin/python scripts/bench_dashboard.py --shape suites --results 10000000  # 10M, ~5 min here
    .venv/bin/python scripts/bench_dashboard.py --shape wide --fill --database-url postgresql://...  # PostgreSQL
"""

from __future__ import annotations

import argparse
import os
import random
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import httpx
from rich.console import Console
from rich.progress import Progress
from rich.table import Table
from sqlalchemy import func, select

sys.path.insert(0, str(Path(__file__).resolve().parent))

from synthetic_history import generate

from tewatch.store.engine.database import make_engine
from tewatch.store.engine.migrate import upgrade
from tewatch.store.schema.models import Case, Machine, Result, Run, Series

TARGET_P95_MS = 300.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def fill_suites(url: str, results: int, console: Console) -> None:
    upgrade(url)
    engine = make_engine(url)
    console.print(f"generating the suites history ({results:,} results) …")
    generate(engine, results, progress=False)
    engine.dispose()


def fill_wide(url: str, results: int, console: Console) -> None:
    from bench_store import UploadFactory, fill_history

    from tewatch.ingest.service import ingest_bundle

    upgrade(url)
    engine = make_engine(url)
    factory = UploadFactory(5000, 10)
    console.print(f"generating the wide history ({results:,} results) …")
    ingest_bundle(engine, factory.bundle(0))
    fill_history(engine, factory, results, random.Random(2))
    engine.dispose()


def page_plan(url: str) -> list[tuple[str, Callable[[random.Random], str]]]:
    """(page name, path maker): ids are drawn from the database so every request may hit a different one."""
    engine = make_engine(url)
    with engine.connect() as conn:
        case_ids = list(conn.scalars(select(Case.id)))
        series_ids = list(
            conn.scalars(
                select(Series.id)
                .join(Result, Result.series_id == Series.id)
                .group_by(Series.id)
                .having(func.count() > 1)
                .limit(2000)
            )
        )
        run_ids = list(conn.scalars(select(Run.id)))
        previous_on_machine: dict[int, int] = {}
        run_pairs = []  # (a run, the one before it on its machine): what /api/v1/compare is asked for
        for run_id, machine_id in conn.execute(
            select(Run.id, Run.machine_id).where(Run.pr_number.is_(None)).order_by(Run.id)
        ):
            if machine_id in previous_on_machine:
                run_pairs.append((previous_on_machine[machine_id], run_id))
            previous_on_machine[machine_id] = run_id
        gpus = list(conn.scalars(select(Machine.gpu_model).distinct()))
        failing_case = conn.scalar(select(Case.id).where(Case.mode.is_not(None)).limit(1)) or case_ids[0]
        pull_request = conn.scalar(select(func.min(Run.pr_number)))
    engine.dispose()
    pages: list[tuple[str, Callable[[random.Random], str]]] = [
        ("overview /", lambda r: "/"),
        ("overview, GPU filter", lambda r: f"/?gpu={r.choice(gpus)}"),
        ("overview, search", lambda r: "/?q=error"),
        ("matrix /matrix", lambda r: "/matrix"),
        ("matrix, GPU filter", lambda r: f"/matrix?gpu={r.choice(gpus)}"),
        ("case /case/{id}", lambda r: f"/case/{r.choice([*case_ids, failing_case])}"),
        ("series /series/{id}", lambda r: f"/series/{r.choice(series_ids)}"),
        ("series data (last 300)", lambda r: f"/series/{r.choice(series_ids)}/points.json"),
        ("series data (all, bucketed)", lambda r: f"/series/{r.choice(series_ids)}/points.json?last=all"),
        ("series SVG (first render)", lambda r: f"/series/{r.choice(series_ids)}/plot.svg?last=100"),
        ("series SVG (cached)", lambda r: f"/series/{series_ids[0]}/plot.svg"),
        ("runs /runs", lambda r: f"/runs?page={r.randint(1, 20)}"),
        ("run /runs/{id}", lambda r: f"/runs/{r.choice(run_ids)}"),
        ("machines /machines", lambda r: "/machines"),
        ("compare /api/v1/compare", lambda r: "/api/v1/compare?base={}&head={}".format(*r.choice(run_pairs))),
        ("alerts /alerts", lambda r: "/alerts"),
        ("releases /releases", lambda r: "/releases"),
    ]
    if pull_request is not None:  # the suites history has pull requests; the wide one has none
        pages.append((f"pull request /pr/{pull_request}", lambda r: f"/pr/{pull_request}"))
    return pages


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def time_pages(
    url: str,
    requests: int,
    console: Console,
    page_cache: bool = True,
    pythonpath: str | None = None,
    only: set[str] | None = None,
) -> list[tuple[str, int, list[float]]]:
    """Times every page of page_plan (those named in `only`) served by the checkout on `pythonpath`
    (default: this process's PYTHONPATH, the service of the checkout being measured)."""
    port = free_port()
    env = {"TEWATCH_DATABASE_URL": url, "PATH": "/usr/bin:/bin"}
    pythonpath = pythonpath or os.environ.get("PYTHONPATH")
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    if not page_cache:
        env["TEWATCH_DASHBOARD_CACHE_ENTRIES"] = "0"
    with tempfile.NamedTemporaryFile("w+", suffix=".log") as log:
        server = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "uvicorn",
                "--factory",
                "tewatch.api.app:create_app",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--log-level",
                "warning",
            ],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        base = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 60
            while True:
                try:
                    httpx.get(base + "/api/v1/health", timeout=1)
                    break
                except httpx.TransportError:
                    if time.monotonic() > deadline or server.poll() is not None:
                        log.seek(0)
                        raise SystemExit(f"the service did not start: {log.read()[-2000:]}") from None
                    time.sleep(0.2)
            rng = random.Random(3)
            out = []
            with (
                httpx.Client(base_url=base, timeout=60) as client,
                Progress(console=console, transient=True) as bar,
            ):
                plan = [(name, path) for name, path in page_plan(url) if only is None or name in only]
                task = bar.add_task("timing pages", total=len(plan))
                for name, path in plan:
                    statuses = set()
                    for _ in range(2):
                        client.get(path(rng))
                    times = []
                    for _ in range(requests):
                        start = time.perf_counter()
                        answer = client.get(path(rng))
                        times.append(time.perf_counter() - start)
                        statuses.add(answer.status_code)
                    out.append((name, max(statuses), times))
                    bar.advance(task)
            return out
        finally:
            server.terminate()
            server.wait(timeout=15)


def report(title: str, url: str, rows: list[tuple[str, int, list[float]]], console: Console) -> bool:
    engine = make_engine(url)
    with engine.connect() as conn:
        n_results = conn.scalar(select(func.count()).select_from(Result))
        n_cases = conn.scalar(select(func.count()).select_from(Case))
        n_runs = conn.scalar(select(func.count()).select_from(Run))
    engine.dispose()
    table = Table(
        title=f"{title}: {n_results:,} results, {n_cases:,} cases, {n_runs:,} runs ({engine.dialect.name})"
    )
    for column in ("page", "status", "p50 ms", "p95 ms", "max ms", f"p95 < {TARGET_P95_MS:.0f} ms"):
        table.add_column(column, justify="left" if column == "page" else "right")
    ok = True
    for name, status, times in rows:
        p95 = percentile(times, 95) * 1e3
        ok &= p95 < TARGET_P95_MS and status < 500
        table.add_row(
            name,
            str(status),
            f"{percentile(times, 50) * 1e3:.1f}",
            f"{p95:.1f}",
            f"{max(times) * 1e3:.1f}",
            "yes" if p95 < TARGET_P95_MS else "NO",
        )
    console.print(table)
    return ok


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--shape", choices=["suites", "wide", "both"], default="both")
    parser.add_argument("--results", type=int, default=1_000_000)
    parser.add_argument("--requests", type=int, default=40, help="timed requests per page")
    parser.add_argument(
        "--database-url", help="time pages on this database instead of a temporary SQLite one"
    )
    parser.add_argument(
        "--no-page-cache",
        dest="page_cache",
        action="store_false",
        help="render the overview and matrix on every request (what the first view after an upload costs)",
    )
    parser.add_argument(
        "--fill",
        action="store_true",
        help="with --database-url (an empty database, e.g. PostgreSQL): generate one --shape into it first",
    )
    args = parser.parse_args()
    console = Console()
    ok = True
    fills = {"suites": fill_suites, "wide": fill_wide}
    cache_note = "" if args.page_cache else ", page cache off"
    if args.fill and (not args.database_url or args.shape == "both"):
        parser.error("--fill needs --database-url and one --shape (suites or wide)")
    if args.database_url:
        if args.fill:
            fills[args.shape](args.database_url, args.results, console)
        title = (f"{args.shape} history" if args.fill else "given database") + cache_note
        timings = time_pages(args.database_url, args.requests, console, args.page_cache)
        ok = report(title, args.database_url, timings, console)
    else:
        for shape in ["suites", "wide"] if args.shape == "both" else [args.shape]:
            with tempfile.TemporaryDirectory() as folder:
                url = f"sqlite:///{folder}/bench.sqlite3"
                fills[shape](url, args.results, console)
                ok &= report(
                    f"{shape} history{cache_note}",
                    url,
                    time_pages(url, args.requests, console, args.page_cache),
                    console,
                )
    raise SystemExit(0 if ok else 1)


if __name__ == "__main__":
    main()

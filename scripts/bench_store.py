"""Store benchmark: ingest throughput and query latency with ~1,000,000 stored results.

Generates realistic uploads (asv v2 results with samples, benchmarks.json, machine.json and one sidecar
case record per case), ingests them through the real ingest core (parse, validate, plan, write), then
times the series query and the latest-verdicts query. Prints one table per backend.

    .venv/bin/python scripts/bench_store.py                       # SQLite and PostgreSQL, 1M results
    .venv/bin/python scripts/bench_store.py --backend sqlite --runs 10   # quick look

Targets: ingest >= 20,000 result rows/s; series p95 < 50 ms; latest verdicts over 5,000 cases p95 < 200 ms.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from tewatch.ingest.bundle import UploadBundle
from tewatch.ingest.fingerprints import case_id
from tewatch.ingest.service import ingest_bundle
from tewatch.store import queries
from tewatch.store.database import make_engine
from tewatch.store.migrate import upgrade

REPO_ROOT = Path(__file__).resolve().parent.parent
CASE = "linear.LinearFwdBwd"
BENCHMARKS = ("time_fwd_bwd", "track_seconds")
PARAM_NAMES = ["recipe", "rank", "mode", "shape"]
RECIPES = ["nvfp4", "mxfp8", "fp8_current", "fp8_block", "bf16"]
RANKS = [2, 3, 4, 5]
MODES = ["eager", "default", "reduce-overhead", "max-autotune", "no-cudagraphs"]
VERDICTS = ["pass"] * 90 + ["fail_accuracy"] * 4 + ["error"] * 3 + ["unsupported"] * 2 + ["oom"]


def param_grid(n_cases: int) -> tuple[list[list[str]], list[tuple]]:
    shapes = [
        f"{1024 * (1 + i)}x4096" for i in range(max(1, n_cases // (len(RECIPES) * len(RANKS) * len(MODES))))
    ]
    values = [RECIPES, RANKS, MODES, shapes]
    return [[repr(v) for v in axis] for axis in values], list(itertools.product(*values))


class UploadFactory:
    def __init__(self, n_cases: int, n_samples: int, seed: int = 0) -> None:
        self.rng = random.Random(seed)
        self.param_reprs, self.combos = param_grid(n_cases)
        self.n_samples = n_samples
        self.base = [self.rng.uniform(1e-4, 5e-3) for _ in self.combos]
        self.benchmarks = json.dumps(
            {
                **{
                    f"{CASE}.{name}": {"name": f"{CASE}.{name}", "param_names": PARAM_NAMES,
                                       "params": self.param_reprs, "type": name.split("_")[0],
                                       "unit": "seconds", "version": "v1"}
                    for name in BENCHMARKS
                },
                "version": 2,
            }
        ).encode()  # fmt: skip
        self.machine = json.dumps(
            {"machine": "h200-bench", "gpu_model": "NVIDIA H200", "compute_capability": "9.0", "gpu_count": "1",
             "gpu_memory_mb": "143771", "driver": "580.159.04", "cuda": "13.0", "version": 1}
        ).encode()  # fmt: skip
        self.case_ids = [case_id(CASE, dict(zip(PARAM_NAMES, combo, strict=True))) for combo in self.combos]

    @property
    def n_results(self) -> int:
        return len(self.combos) * len(BENCHMARKS)

    def bundle(self, index: int) -> UploadBundle:
        rng = self.rng
        columns = ["result", "params", "version", "started_at", "duration", "stats_ci_99_a", "stats_ci_99_b",
                   "stats_q_25", "stats_q_75", "stats_number", "stats_repeat", "samples"]  # fmt: skip
        results = {}
        for name in BENCHMARKS:
            samples = [[b * rng.gauss(1, 0.02) for _ in range(self.n_samples)] for b in self.base]
            medians = [statistics.median(s) for s in samples]
            skipped = {i for i in range(len(medians)) if i % 97 == 0}
            values = [float("nan") if i in skipped else m for i, m in enumerate(medians)]
            results[f"{CASE}.{name}"] = [
                values, self.param_reprs, "v1", 1_790_000_000_000 + index, 12.5,
                [min(s) for s in samples], [max(s) for s in samples],
                [m * 0.99 for m in medians], [m * 1.01 for m in medians],
                [1] * len(medians), [self.n_samples] * len(medians), samples,
            ]  # fmt: skip
        document = {"commit_hash": f"{index:040x}", "env_name": "existing-py_bench", "date": 1_790_000_000_000
                    + index * 3_600_000, "params": {}, "python": "3.12", "requirements": {}, "env_vars": {},
                    "result_columns": columns, "results": results, "durations": {}, "version": 2}  # fmt: skip
        cases = []
        for cid, combo in zip(self.case_ids, self.combos, strict=True):
            status = rng.choice(VERDICTS)
            verdict = {"status": status, "check": "native_vs_reference"}
            if status in ("pass", "fail_accuracy"):
                verdict |= {"metric": "max_abs_err", "value": rng.random() * 1e-3, "tolerance": 5e-4}
            elif status in ("error", "oom"):
                verdict |= {"exception_class": "RuntimeError", "message": "compile failed on 3D input"}
            record = {"schema": "tewatch.case/1", "case": CASE, "params": dict(zip(PARAM_NAMES, combo, strict=True)),
                      "labels": {"backend": "te", "recipe": combo[0], "rank": combo[1], "mode": combo[2]},
                      "verdict": verdict, "recorded_at": "2026-11-29T19:03:12Z"}  # fmt: skip
            cases.append((f"{cid}.json", json.dumps(record).encode()))
        return UploadBundle(
            result=json.dumps(document).encode(), machine=self.machine, benchmarks=self.benchmarks,
            cases=cases, branch="main", repo="NVIDIA/TransformerEngine",
        )  # fmt: skip


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def run_backend(url: str, args, console: Console) -> dict:
    upgrade(url)
    engine = make_engine(url)
    factory = UploadFactory(args.cases, args.samples)
    ingest_seconds = 0.0
    stored = 0
    with Progress(console=console, transient=True) as progress:
        task = progress.add_task(f"ingest ({engine.dialect.name})", total=args.runs)
        for index in range(args.runs):
            bundle = factory.bundle(index)  # generation is not timed
            start = time.perf_counter()
            outcome = ingest_bundle(engine, bundle)
            ingest_seconds += time.perf_counter() - start
            stored += sum(outcome.summary["results"].values())
            progress.advance(task)
    with engine.connect() as conn:
        counts = queries.store_counts(conn)
        series_ids = [row[0] for row in conn.exec_driver_sql("SELECT id FROM series")]
    rng = random.Random(1)
    series_times, verdict_times = [], []
    with engine.connect() as conn:
        for series_id in rng.sample(series_ids, min(args.queries, len(series_ids))):
            start = time.perf_counter()
            series = queries.get_series(conn, series_id)
            series_times.append(time.perf_counter() - start)
        assert series is not None and len(series["points"]) == args.runs
        for i in range(args.verdict_queries):
            start = time.perf_counter()
            latest = queries.latest_verdicts(conn, branch="main" if i % 2 else None)
            verdict_times.append(time.perf_counter() - start)
        assert len(latest) == len(factory.combos)
    engine.dispose()
    return {"backend": engine.dialect.name, "results": counts["results"], "verdicts": counts["verdicts"],
            "cases": counts["cases"], "rows_per_s": stored / ingest_seconds, "ingest_s": ingest_seconds,
            "series": series_times, "latest": verdict_times, "points": args.runs}  # fmt: skip


def start_postgres(console: Console) -> tuple[str, Path]:
    folder = Path(tempfile.mkdtemp(prefix="tewatch-bench-pg-"))
    script = REPO_ROOT / "scripts" / "pg-test-cluster.sh"
    done = subprocess.run(
        ["bash", str(script), "start", str(folder)], capture_output=True, text=True, check=True
    )
    return done.stdout.strip().splitlines()[-1], folder


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--backend", choices=["sqlite", "postgresql", "both"], default="both")
    parser.add_argument("--postgres-url", help="use this PostgreSQL database instead of a throwaway cluster")
    parser.add_argument("--cases", type=int, default=5000, help="cases per run (2 series each)")
    parser.add_argument("--runs", type=int, default=100, help="uploads (cases x 2 x runs = stored results)")
    parser.add_argument("--samples", type=int, default=10, help="samples per result")
    parser.add_argument("--queries", type=int, default=200, help="series queries timed")
    parser.add_argument("--verdict-queries", type=int, default=40, help="latest-verdicts queries timed")
    args = parser.parse_args()
    console = Console(width=max(Console().width, 150))
    load_before = os.getloadavg()
    reports = []
    if args.backend in ("sqlite", "both"):
        with tempfile.TemporaryDirectory() as folder:
            reports.append(run_backend(f"sqlite:///{folder}/bench.sqlite3", args, console))
    if args.backend in ("postgresql", "both"):
        if args.postgres_url:
            reports.append(run_backend(args.postgres_url, args, console))
        else:
            url, folder = start_postgres(console)
            try:
                reports.append(run_backend(url, args, console))
            finally:
                subprocess.run(["bash", str(REPO_ROOT / "scripts" / "pg-test-cluster.sh"), "stop", str(folder)],
                               check=False)  # fmt: skip
    table = Table(title="tewatch store benchmark")
    for column in ("backend", "stored results", "verdicts", "cases", "ingest rows/s", "series p50 ms",
                   "series p95 ms", "latest-verdicts p50 ms", "latest-verdicts p95 ms"):  # fmt: skip
        table.add_column(column, justify="right")
    for r in reports:
        table.add_row(
            r["backend"], f"{r['results']:,}", f"{r['verdicts']:,}", f"{r['cases']:,}", f"{r['rows_per_s']:,.0f}",
            f"{percentile(r['series'], 50) * 1e3:.1f}", f"{percentile(r['series'], 95) * 1e3:.1f}",
            f"{percentile(r['latest'], 50) * 1e3:.1f}", f"{percentile(r['latest'], 95) * 1e3:.1f}",
        )  # fmt: skip
    console.print(table)
    console.print("targets: ingest >= 20,000 rows/s; series p95 < 50 ms (points per series: "
                  f"{reports[0]['points']}); latest verdicts p95 < 200 ms")  # fmt: skip
    # other work on the machine slows every figure: say how busy it was
    load_after = os.getloadavg()
    console.print(f"load average (1 min) before {load_before[0]:.2f}, after {load_after[0]:.2f}; "
                  f"{os.cpu_count()} CPUs")  # fmt: skip


if __name__ == "__main__":
    main()

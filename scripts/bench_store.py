"""Store benchmark: ingest time as history grows, against a bare insert of the same rows, and query latency.

Realistic uploads (asv v2 results with samples, benchmarks.json, machine.json and one sidecar case record
per case: 5,000 cases x 2 series, 15,000 rows) go through the real ingest core (parse, validate, plan,
write). Before each round of timed uploads the history is filled up to the next --history level with runs
of the same cases, bulk-written (executemany on SQLite, COPY on PostgreSQL, the two history indexes built
afterwards) and older than every timed upload, so the latest-verdict tables are what ingest left. Beside
each timed upload, a bare DB-API executemany of its rows (bound and ordered as ingest binds and orders
them: by series, by case) is timed into unindexed copies of results and verdicts, and into the tables
themselves (their indexes at their size), rolled back. On SQLite the WAL checkpoint that follows an upload
in the background (tewatch.store.engine.checkpoints) is waited for and timed apart ("then checkpoint ms"), with
nothing else running. Then the series query (the API's answer: a series' newest 1,000 points in commit
order, read by the pages' reader, series_reads) and the latest-verdicts query are timed. Prints a table
per level and the ingest growth per million stored results (least-squares slope).

    .venv/bin/python scripts/bench_store.py                                       # SQLite and PostgreSQL, 0 and 1M
    .venv/bin/python scripts/bench_store.py --backend sqlite --history 0,2.5e6,5e6,1e7    # 10M

Targets: ingest time flat as history grows; ingest >= 0.3 of the bare indexed insert; series p95 < 50 ms;
latest verdicts over 5,000 cases p95 < 200 ms.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import random
import statistics
import subprocess
import tempfile
import time
from datetime import UTC, datetime, timedelta
from operator import itemgetter
from pathlib import Path

from rich.console import Console
from rich.table import Table
from sqlalchemy import Connection, Engine, Row, func, insert, select
from synthetic_history import NO_CHECKS, drop_history_indexes

from tewatch.ingest.bundle import UploadBundle
from tewatch.ingest.fingerprints import case_id
from tewatch.ingest.plan import build_plan
from tewatch.ingest.service import ingest_bundle
from tewatch.ingest.writer import RESULT_COLUMNS, VERDICT_COLUMNS
from tewatch.store.engine import checkpoints
from tewatch.store.engine.database import is_sqlite, make_engine
from tewatch.store.engine.migrate import upgrade
from tewatch.store.reads import queries
from tewatch.store.schema.models import Case, Commit, Result, Run, Series, Verdict
from tewatch.store.writes.bulk import bound_rows, insert_rows

REPO_ROOT = Path(__file__).resolve().parent.parent
CASE = "linear.LinearFwdBwd"
BENCHMARKS = ("time_fwd_bwd", "track_seconds")
PARAM_NAMES = ["recipe", "rank", "mode", "shape"]
RECIPES = ["nvfp4", "mxfp8", "fp8_current", "fp8_block", "bf16"]
RANKS = [2, 3, 4, 5]
MODES = ["eager", "default", "reduce-overhead", "max-autotune", "no-cudagraphs"]
FILL_ENV = "existing-py_history"  # the asv environment of the bulk-written history runs
FILL_RUNS_PER_BATCH = 10
FILL_RESULT_COLUMNS = ("run_id", "series_id", "status", "value", "samples", "q_25", "q_75", "number", "repeat",
                       "benchmark_version")  # fmt: skip
FILL_VERDICT_COLUMNS = ("run_id", "case_id", "status", "check", "metric", "metric_value", "tolerance",
                        "extra_checks", "gpu_state")  # fmt: skip
NO_STATE: dict = {}
BARE_RUN_INDEX = 10**9  # the run the bare inserts write for, rolled back
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


def parse_levels(text: str) -> list[int]:
    levels = sorted({int(float(part)) for part in text.split(",") if part.strip()})
    if not levels or levels[0] < 0:
        raise argparse.ArgumentTypeError("expected stored-result counts such as 0,1e6,1e7")
    return levels


def fill_history(engine: Engine, factory: UploadFactory, target: int, rng: random.Random) -> int:
    """Bulk-write runs of the factory's cases (commits older than every timed upload, so the latest-verdict
    tables stay as ingest left them) until about `target` results are stored; returns the count."""
    with engine.connect() as conn:
        stored = conn.scalar(select(func.count()).select_from(Result)) or 0
        first = conn.execute(select(Run.machine_id, Run.environment_id).order_by(Run.id).limit(1)).one()
        series = conn.execute(select(Series.id, Series.case_id).order_by(Series.id)).all()
        case_ids = sorted({case for _, case in series})
        filled_runs = (
            conn.scalar(select(func.count()).select_from(Run).where(Run.asv_env_name == FILL_ENV)) or 0
        )
    runs = max(0, math.ceil((target - stored) / len(series)))
    if not runs:
        return stored
    noise = [sorted(rng.gauss(1, 0.02) for _ in range(10)) for _ in range(1024)]
    base = [rng.uniform(1e-4, 5e-3) for _ in series]
    started = datetime(2026, 1, 1, tzinfo=UTC)
    with engine.begin() as conn:
        deferred = drop_history_indexes(conn)
    for first_run in range(filled_runs, filled_runs + runs, FILL_RUNS_PER_BATCH):
        batch = range(first_run, min(filled_runs + runs, first_run + FILL_RUNS_PER_BATCH))
        with engine.begin() as conn:
            run_ids = [fill_run(conn, index, first, started) for index in batch]
            results, verdicts = [], []
            for run_id in run_ids:
                for (series_id, _), level in zip(series, base, strict=True):
                    samples = [level * f for f in noise[rng.getrandbits(10)]]
                    results.append(
                        (run_id, series_id, "ok", samples[5], samples, samples[2], samples[7], 1, 10, "v1")
                    )
                verdicts += [(run_id, case, "pass", "native_vs_reference", "max_abs_err", 1e-4, 5e-4, NO_CHECKS, NO_STATE)
                             for case in case_ids]  # fmt: skip
            insert_rows(conn, Result.__table__, FILL_RESULT_COLUMNS, results)
            insert_rows(conn, Verdict.__table__, FILL_VERDICT_COLUMNS, verdicts)
            stored += len(results)
    with engine.begin() as conn:
        for index in deferred:
            index.create(conn)
    if engine.dialect.name == "postgresql":
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            # what autovacuum does soon after a load this size, while the pages are timed: the statistics,
            # and the visibility map the index-only scans of the history indexes need
            conn.exec_driver_sql("VACUUM ANALYZE")
    return stored


def fill_run(conn: Connection, index: int, first: Row, started: datetime) -> int:
    at = started + timedelta(minutes=index)
    commit_id = conn.execute(
        insert(Commit).returning(Commit.id),
        {"repo": "NVIDIA/TransformerEngine", "sha": f"f{index:039x}", "parents": [], "branch": "main",
         "committed_at": at},
    ).scalar_one()  # fmt: skip
    return conn.execute(
        insert(Run).returning(Run.id),
        {"digest": f"fill-{index}", "machine_id": first.machine_id, "environment_id": first.environment_id,
         "commit_id": commit_id, "branch": "main", "asv_env_name": FILL_ENV, "started_at": at,
         "uploaded_at": at, "summary": {}},
    ).scalar_one()  # fmt: skip


def bare_insert_seconds(engine: Engine, bundle: UploadBundle, indexed: bool, durable: bool = False) -> float:
    """A bare DB-API executemany of the upload's result and verdict rows, bound and ordered as ingest binds
    and orders them, into the results and verdicts tables themselves (their indexes and foreign keys, their
    size; for a run made for it) or into unindexed copies; rolled back, or (`durable`) committed, the commit
    timed with the inserts as an upload's is, then deleted and checkpointed untimed."""
    plan = build_plan(bundle)
    with engine.connect() as conn:
        series_ids = dict(conn.execute(select(Series.fingerprint, Series.id)).all())
        case_ids = dict(conn.execute(select(Case.fingerprint, Case.id)).all())
        first = conn.execute(select(Run.machine_id, Run.environment_id).order_by(Run.id).limit(1)).one()
        conn.rollback()
        transaction = conn.begin()
        run_id = fill_run(conn, BARE_RUN_INDEX, first, datetime(2026, 1, 1, tzinfo=UTC))
        results = [(run_id, series_ids[r.series_fingerprint], *r[1:]) for r in plan.results]
        verdicts = [(run_id, case_ids[v.case_fingerprint], *v[1:]) for v in plan.verdicts]
        statements = []
        for table, columns, rows in ((Result.__table__, RESULT_COLUMNS, results),
                                     (Verdict.__table__, VERDICT_COLUMNS, verdicts)):  # fmt: skip
            name = table.name
            if not indexed:
                name = f"bare_{table.name}"
                conn.exec_driver_sql(
                    f"CREATE TEMPORARY TABLE {name} AS SELECT * FROM {table.name} WHERE 1 = 0"
                )
            marks = ", ".join(["?" if is_sqlite(conn) else "%s"] * len(columns))
            quoted = ", ".join(conn.dialect.identifier_preparer.quote(c) for c in columns)
            # in the order ingest writes them: by series (results) and by case (verdicts), once bound
            ordered = sorted(bound_rows(conn, table, columns, rows), key=itemgetter(1))
            statements.append((f"INSERT INTO {name} ({quoted}) VALUES ({marks})", ordered))
        cursor = conn.connection.cursor()
        start = time.perf_counter()
        for statement, rows in statements:
            cursor.executemany(statement, rows)
        if durable:
            transaction.commit()
        elapsed = time.perf_counter() - start
        cursor.close()
        if not durable:
            transaction.rollback()
            return elapsed
        with conn.begin():
            for table in (Result, Verdict):
                conn.execute(table.__table__.delete().where(table.run_id == run_id))
            commit_id = conn.scalar(select(Run.commit_id).where(Run.id == run_id))
            conn.execute(Run.__table__.delete().where(Run.id == run_id))
            conn.execute(Commit.__table__.delete().where(Commit.id == commit_id))
    checkpoints.wait_idle(600)
    return elapsed


def time_level(engine: Engine, factory: UploadFactory, first_index: int, runs: int) -> dict:
    """Ingest `runs` uploads through the real ingest core, each beside the bare inserts of its rows."""
    ingest, bare, bare_indexed, bare_committed, checkpoint = [], [], [], [], []
    for index in range(first_index, first_index + runs):
        bundle = factory.bundle(index)  # generation is not timed
        bare.append(bare_insert_seconds(engine, bundle, indexed=False))
        bare_indexed.append(bare_insert_seconds(engine, bundle, indexed=True))
        bare_committed.append(bare_insert_seconds(engine, bundle, indexed=True, durable=True))
        start = time.perf_counter()
        ingest_bundle(engine, bundle)
        ingest.append(time.perf_counter() - start)
        start = time.perf_counter()
        checkpoints.wait_idle()  # SQLite's WAL checkpoint after the upload: timed apart, nothing beside it
        checkpoint.append(time.perf_counter() - start)
    return {"ingest": statistics.median(ingest), "bare": statistics.median(bare),
            "bare_indexed": statistics.median(bare_indexed), "bare_committed": statistics.median(bare_committed),
            "checkpoint": statistics.median(checkpoint)}  # fmt: skip


def growth_per_million(points: list[tuple[int, float]]) -> float | None:
    """Least-squares slope of ingest seconds over stored results, per million results."""
    if len({x for x, _ in points}) < 2:
        return None
    return statistics.linear_regression([x / 1e6 for x, _ in points], [y for _, y in points]).slope


def run_backend(url: str, args, console: Console) -> dict:
    upgrade(url)
    engine = make_engine(url)
    factory = UploadFactory(args.cases, args.samples)
    rng = random.Random(2)
    ingest_bundle(engine, factory.bundle(0))  # the cases and series every later row refers to
    index, levels = 1, []
    for target in args.history:
        start = time.perf_counter()
        stored = fill_history(engine, factory, target, rng)
        checkpoints.wait_idle(600)
        fill_s = time.perf_counter() - start
        console.print(
            f"{engine.dialect.name}: {stored:,} results stored ({fill_s:.0f} s to fill); timing ingest"
        )
        levels.append({"stored": stored, "fill_s": fill_s, **time_level(engine, factory, index, args.runs)})
        index += args.runs
    with engine.connect() as conn:
        counts = queries.store_counts(conn)
        series_ids = [row[0] for row in conn.exec_driver_sql("SELECT id FROM series")]
    series_times, verdict_times = [], []
    with engine.connect() as conn:
        for series_id in rng.sample(series_ids, min(args.queries, len(series_ids))):
            start = time.perf_counter()
            series = queries.get_series(conn, series_id)
            series_times.append(time.perf_counter() - start)
        assert series is not None
        for i in range(args.verdict_queries):
            start = time.perf_counter()
            latest = queries.latest_verdicts(conn, branch="main" if i % 2 else None)
            verdict_times.append(time.perf_counter() - start)
        assert len(latest) == len(factory.combos)
    engine.dispose()
    return {"backend": engine.dialect.name, "results": counts["results"], "verdicts": counts["verdicts"],
            "cases": counts["cases"], "levels": levels, "series": series_times, "latest": verdict_times,
            "points": len(series["points"]), "rows": factory.n_results + len(factory.combos)}  # fmt: skip


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
    parser.add_argument("--history", type=parse_levels, default=parse_levels("0,1e6"),
                        help="stored results before each round of timed uploads, e.g. 0,2.5e6,5e6,1e7")  # fmt: skip
    parser.add_argument("--runs", type=int, default=5, help="timed uploads per history level")
    parser.add_argument("--samples", type=int, default=10, help="samples per result")
    parser.add_argument("--queries", type=int, default=200, help="series queries timed")
    parser.add_argument("--verdict-queries", type=int, default=40, help="latest-verdicts queries timed")
    args = parser.parse_args()
    console = Console(width=max(Console().width, 150))
    load_before = os.getloadavg()
    started = time.perf_counter()
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
    table = Table(title="tewatch store benchmark: one upload of "
                  f"{reports[0]['rows']:,} rows (results and verdicts) as history grows")  # fmt: skip
    for column in ("backend", "stored results", "fill s", "ingest ms", "then checkpoint ms", "bare ms",
                   "bare indexed ms", "bare indexed, committed ms", "ingest / bare", "ingest / bare indexed",
                   "ingest / bare indexed, committed", "ingest rows/s"):  # fmt: skip
        table.add_column(column, justify="right")
    for r in reports:
        for level in r["levels"]:
            table.add_row(
                r["backend"], f"{level['stored']:,}", f"{level['fill_s']:.0f}", f"{level['ingest'] * 1e3:.0f}",
                f"{level['checkpoint'] * 1e3:.0f}" if r["backend"] == "sqlite" else "-", f"{level['bare'] * 1e3:.0f}", f"{level['bare_indexed'] * 1e3:.0f}",
                f"{level['bare_committed'] * 1e3:.0f}", f"{level['bare'] / level['ingest']:.3f}",
                f"{level['bare_indexed'] / level['ingest']:.3f}", f"{level['bare_committed'] / level['ingest']:.3f}",
                f"{r['rows'] / level['ingest']:,.0f}",
            )  # fmt: skip
    console.print(table)
    queries_table = Table(title="queries, at the last history level")
    for column in ("backend", "stored results", "verdicts", "cases", "ingest growth ms per 1M results",
                   "series p50 ms", "series p95 ms", "latest-verdicts p50 ms", "latest-verdicts p95 ms"):  # fmt: skip
        queries_table.add_column(column, justify="right")
    for r in reports:
        growth = growth_per_million([(level["stored"], level["ingest"]) for level in r["levels"]])
        queries_table.add_row(
            r["backend"], f"{r['results']:,}", f"{r['verdicts']:,}", f"{r['cases']:,}",
            "-" if growth is None else f"{growth * 1e3:.1f}",
            f"{percentile(r['series'], 50) * 1e3:.1f}", f"{percentile(r['series'], 95) * 1e3:.1f}",
            f"{percentile(r['latest'], 50) * 1e3:.1f}", f"{percentile(r['latest'], 95) * 1e3:.1f}",
        )  # fmt: skip
    console.print(queries_table)
    console.print("targets: ingest time flat as history grows; ingest >= 0.3 of the bare indexed insert; "
                  f"series p95 < 50 ms (points per series: {reports[0]['points']}); latest verdicts p95 < 200 ms")  # fmt: skip
    console.print(f"wall time {time.perf_counter() - started:.0f} s")
    # other work on the machine slows every figure: say how busy it was
    load_after = os.getloadavg()
    console.print(f"load average (1 min) before {load_before[0]:.2f}, after {load_after[0]:.2f}; "
                  f"{os.cpu_count()} CPUs")  # fmt: skip


if __name__ == "__main__":
    main()

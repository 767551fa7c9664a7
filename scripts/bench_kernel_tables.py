"""Kernel tables stored two ways, side by side in one run on SQLite (the service's engine: orjson, WAL): as the service keeps them (one row per
case and run, the table a JSON list: `case_kernels`) and as a row per kernel. Prints, per read the
service makes, the median time of each and their ratio, and what each costs to write and keep.

    python scripts/bench_kernel_tables.py [--runs 300] [--cases 100] [--kernels 40]

Reads: the case page (one case's newest table), the API's page (one case's 20 newest), a pull request's
comparison (every case's table in two runs)."""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from sqlalchemy import Column, Float, Index, Integer, MetaData, String, Table, select

from tewatch.store.engine.database import make_engine
from tewatch.store.schema.models import CaseKernels

ROWS = MetaData()
KERNEL_ROWS = Table(
    "kernel_rows",
    ROWS,
    Column("id", Integer, primary_key=True),
    Column("run_id", Integer),
    Column("case_id", Integer),
    Column("name", String(1000)),
    Column("calls_per_call", Float),
    Column("total_seconds", Float),
    Column("mean_seconds", Float),
    Index("ix_kernel_rows_case", "case_id", "run_id"),
    Index("ix_kernel_rows_run", "run_id", "case_id"),
)
REPEATS = 60
NAMES = [f"transformer_engine::detail::kernel_{i}<nvte_fp8e4m3, float, {i % 7}>" for i in range(200)]


def table_of(rng: random.Random, kernels: int) -> list[dict]:
    rows = [
        {
            "name": name,
            "calls_per_call": float(rng.randint(1, 4)),
            "total_seconds": rng.uniform(1e-6, 1e-3),
            "mean_seconds": rng.uniform(1e-6, 1e-4),
        }
        for name in rng.sample(NAMES, kernels)
    ]
    return sorted(rows, key=lambda r: -r["total_seconds"])


def fill(folder: Path, runs: int, cases: int, kernels: int) -> dict[str, tuple]:
    """Both stores, the same tables in each: layout -> (engine, seconds to write, bytes on disk)."""
    rng = random.Random(0)
    tables = [[table_of(rng, kernels) for _ in range(cases)] for _ in range(runs)]
    stores = {}
    for layout in ("JSON column", "row per kernel"):
        engine = make_engine(f"sqlite:///{folder / (layout.replace(' ', '-') + '.sqlite3')}")
        (CaseKernels.metadata if layout == "JSON column" else ROWS).create_all(
            engine, tables=[CaseKernels.__table__ if layout == "JSON column" else KERNEL_ROWS]
        )
        started = time.perf_counter()
        for run_id, run in enumerate(tables, start=1):
            with engine.begin() as conn:
                if layout == "JSON column":
                    conn.execute(
                        CaseKernels.__table__.insert(),
                        [
                            {
                                "run_id": run_id,
                                "case_id": case_id,
                                "device": "cuda",
                                "profiled_calls": 20,
                                "launches_per_call": 14.0,
                                "syncs_per_call": 0.0,
                                "copies_per_call": 1.0,
                                "kernels": table,
                            }
                            for case_id, table in enumerate(run, start=1)
                        ],
                    )
                else:
                    conn.execute(
                        KERNEL_ROWS.insert(),
                        [
                            {"run_id": run_id, "case_id": case_id, **row}
                            for case_id, table in enumerate(run, start=1)
                            for row in table
                        ],
                    )
        written = time.perf_counter() - started
        with engine.connect() as conn:
            conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
        size = sum(p.stat().st_size for p in folder.glob(layout.replace(" ", "-") + ".sqlite3*"))
        stores[layout] = (engine, written, size)
    return stores


def timed_ms(read: Callable[[int], object], key: int) -> float:
    started = time.perf_counter()
    read(key)
    return 1000 * (time.perf_counter() - started)


def reads(engine, layout: str, runs: int) -> dict[str, Callable[[int], object]]:
    json_table, rows = CaseKernels.__table__, KERNEL_ROWS

    def newest(case_id: int, limit: int) -> object:
        with engine.connect() as conn:
            if layout == "JSON column":
                query = select(json_table).where(json_table.c.case_id == case_id)
                return conn.execute(query.order_by(json_table.c.run_id.desc()).limit(limit)).all()
            wanted = (
                select(rows.c.run_id)
                .where(rows.c.case_id == case_id)
                .distinct()
                .order_by(rows.c.run_id.desc())
                .limit(limit)
            )
            query = select(rows).where(rows.c.case_id == case_id, rows.c.run_id.in_(wanted))
            return conn.execute(query).all()

    def two_runs(run_id: int) -> object:
        with engine.connect() as conn:
            if layout == "JSON column":
                return conn.execute(select(json_table).where(json_table.c.run_id.in_([run_id, runs]))).all()
            return conn.execute(select(rows).where(rows.c.run_id.in_([run_id, runs]))).all()

    return {
        "case page: one case's newest table": lambda case_id: newest(case_id, 1),
        "API: one case's 20 newest tables": lambda case_id: newest(case_id, 20),
        "PR comparison: every table of two runs": two_runs,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--cases", type=int, default=100)
    parser.add_argument("--kernels", type=int, default=40)
    args = parser.parse_args()
    rng = random.Random(1)
    with tempfile.TemporaryDirectory() as folder:
        stores = fill(Path(folder), args.runs, args.cases, args.kernels)
        print(f"{args.runs} runs x {args.cases} cases x {args.kernels} kernels, SQLite")
        print(f"| read | {' ms | '.join(stores)} ms | row per kernel / JSON column |")
        print("|---|---|---|---|")
        layouts = {layout: reads(engine, layout, args.runs) for layout, (engine, _, _) in stores.items()}
        found: dict[str, dict[str, float]] = {}
        for name in layouts["JSON column"]:
            upper = args.cases if name.startswith(("case", "API")) else args.runs - 1
            times: dict[str, list[float]] = {layout: [] for layout in layouts}
            for key in [rng.randint(1, upper) for _ in range(REPEATS)]:
                for layout, read in layouts.items():  # alternately, so that load on the machine hits both
                    read[name](key)  # warm: the pages this key reads
                    times[layout].append(timed_ms(read[name], key))
            found[name] = {layout: statistics.median(t) for layout, t in times.items()}
        for name, medians in found.items():
            json_ms, row_ms = medians["JSON column"], medians["row per kernel"]
            print(f"| {name} | {json_ms:.2f} | {row_ms:.2f} | {row_ms / json_ms:.1f} |")
        written = {layout: w for layout, (_, w, _) in stores.items()}
        sizes = {layout: s / 2**20 for layout, (_, _, s) in stores.items()}
        print(
            f"| write, s per run | {written['JSON column'] / args.runs:.4f} | "
            f"{written['row per kernel'] / args.runs:.4f} | "
            f"{written['row per kernel'] / written['JSON column']:.1f} |"
        )
        print(
            f"| store, MB | {sizes['JSON column']:.0f} | {sizes['row per kernel']:.0f} | "
            f"{sizes['row per kernel'] / sizes['JSON column']:.1f} |"
        )
        for engine, _, _ in stores.values():
            engine.dispose()


if __name__ == "__main__":
    main()

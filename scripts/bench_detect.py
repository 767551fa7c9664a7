"""Detection speed: change points over SERIES x COMMITS points of H200-like noise, a quarter of the series
with a step, 5 % gaps. Prints one row per worker count.

    .venv/bin/python scripts/bench_detect.py --series 5000 --commits 500
"""

from __future__ import annotations

import argparse
import os
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np
from rich.console import Console
from rich.table import Table

from tewatch.detect.changepoint import detect_change_points
from tewatch.detect.noise import H200_PROFILES


def make_series(count: int, commits: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    profiles = list(H200_PROFILES.values())
    values = np.vstack([profiles[i % len(profiles)].commit_values(rng, (1, commits)) for i in range(count)])
    stepped = np.flatnonzero(rng.random(count) < 0.25)
    for row in stepped:
        at = rng.integers(commits // 5, commits - commits // 5)
        values[row, at:] *= 1 + rng.choice([-0.1, -0.05, 0.05, 0.1])
    values[rng.random(values.shape) < 0.05] = np.nan
    return values


def detect_rows(rows: np.ndarray) -> int:
    return sum(len(detect_change_points(row)) for row in rows)


def timed(values: np.ndarray, workers: int) -> tuple[float, int]:
    start = time.perf_counter()
    if workers == 1:
        found = detect_rows(values)
    else:
        with ProcessPoolExecutor(workers) as pool:
            found = sum(pool.map(detect_rows, np.array_split(values, workers * 4)))
    return time.perf_counter() - start, found


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--series", type=int, default=5000)
    parser.add_argument("--commits", type=int, default=500)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    values = make_series(args.series, args.commits, args.seed)
    table = Table(
        title=f"change-point detection, {args.series:,} series x {args.commits} commits "
        f"({int(np.isfinite(values).sum()):,} points), target < 10 s"
    )
    for column in ("workers", "seconds", "series/s", "µs/point", "change points", "target"):
        table.add_column(column, justify="right")
    for workers in sorted({1, min(2, os.cpu_count() or 1)}):
        seconds, found = timed(values, workers)
        table.add_row(
            str(workers),
            f"{seconds:.2f}",
            f"{args.series / seconds:,.0f}",
            f"{seconds / values.size * 1e6:.2f}",
            f"{found:,}",
            "met" if seconds < 10 else "MISSED",
        )
    Console().print(table)


if __name__ == "__main__":
    main()

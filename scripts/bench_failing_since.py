"""Pages that say since when a case fails, side by side: the service of another checkout ("before", e.g. a
worktree at main) and of this one, on the same filled store, each served by real uvicorn in turn.

    git worktree add --detach ../before main
    .venv/bin/python scripts/bench_failing_since.py --before ../before --results 200000
    .venv/bin/python scripts/bench_failing_since.py --before ../before --results 200000 \\
        --database-url postgresql://tewatch:tewatch@127.0.0.1:5432/empty_db --fill

Without --database-url the suites history (scripts/synthetic_history.py) is generated into a temporary SQLite
file. Each side is timed `--rounds` times, alternating, so load on the machine falls on both alike; the table
shows p50/p95 over all of a side's requests.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_dashboard import fill_suites, percentile, time_pages

PAGES = ["overview /", "run /runs/{id}", "case /case/{id}", "alerts /alerts", "releases /releases"]
HERE = Path(__file__).resolve().parent.parent


def service_path(checkout: Path) -> str:
    return os.pathsep.join(str(checkout / part) for part in ("service", "dashboards"))


def compare(url: str, before: Path, requests: int, rounds: int, console: Console) -> Table:
    times: dict[tuple[str, str], list[float]] = {}
    sides = {"before": service_path(before), "after": service_path(HERE)}
    for _ in range(rounds):
        for side, path in sides.items():
            for name, status, taken in time_pages(url, requests, console, False, path, set(PAGES)):
                if status >= 500:
                    raise SystemExit(f"{side}: {name} answered {status}")
                times.setdefault((side, name), []).extend(taken)
    table = Table(title=f"failing since, {before.name} vs {HERE.name} ({url.split(':')[0]}, page cache off)")
    for column in ("page", "before p50", "after p50", "before p95", "after p95", "p50 ratio"):
        table.add_column(column, justify="left" if column == "page" else "right")
    for name in PAGES:
        b, a = times[("before", name)], times[("after", name)]
        b50, a50 = percentile(b, 50) * 1e3, percentile(a, 50) * 1e3
        table.add_row(
            name,
            f"{b50:.1f}",
            f"{a50:.1f}",
            f"{percentile(b, 95) * 1e3:.1f}",
            f"{percentile(a, 95) * 1e3:.1f}",
            f"{a50 / b50:.2f}",
        )
    return table


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--before", type=Path, required=True, help="the checkout to compare with (e.g. main's)"
    )
    parser.add_argument("--results", type=int, default=200_000)
    parser.add_argument("--requests", type=int, default=20, help="timed requests per page, side and round")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--database-url", help="an already filled store (or an empty one with --fill)")
    parser.add_argument("--fill", action="store_true", help="generate the suites history into --database-url")
    args = parser.parse_args()
    console = Console()
    if args.database_url:
        if args.fill:
            fill_suites(args.database_url, args.results, console)
        console.print(compare(args.database_url, args.before.resolve(), args.requests, args.rounds, console))
        return
    with tempfile.TemporaryDirectory() as folder:
        url = f"sqlite:///{folder}/bench.sqlite3"
        fill_suites(url, args.results, console)
        console.print(compare(url, args.before.resolve(), args.requests, args.rounds, console))


if __name__ == "__main__":
    main()

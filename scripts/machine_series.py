"""How many series an asv results folder makes with the machine in a series' key and without it (as the
service keyed series before revision 0012: GPU model and environment only). Prints a table.

    python scripts/machine_series.py RESULTS_DIR [RESULTS_DIR ...]

RESULTS_DIR is an asv results folder (benchmarks.json, one folder per machine), e.g. django-asv's
`results/` with its four machines. Every results file is planned as an upload would be (no database)."""

from __future__ import annotations

import sys
from collections import Counter, defaultdict
from pathlib import Path

from rich.console import Console
from rich.table import Table

from tewatch.ingest.bundle import UploadBundle
from tewatch.ingest.discover import find_runs
from tewatch.ingest.errors import IngestError
from tewatch.ingest.plan import build_plan


def main(folders: list[Path]) -> None:
    before: Counter[tuple[str, str]] = Counter()  # (group key, benchmark) -> points
    machines_of: dict[tuple[str, str], set[str]] = defaultdict(set)
    after: Counter[tuple[str, str, str]] = Counter()  # (group key, machine, benchmark) -> points
    files: Counter[str] = Counter()
    refused = 0
    for folder in folders:
        for run in find_runs(folder):
            bundle = UploadBundle(
                result=run.result.read_bytes(),
                machine=run.machine.read_bytes(),
                benchmarks=run.benchmarks.read_bytes(),
            )
            try:
                plan = build_plan(bundle)
            except IngestError:
                refused += 1
                continue
            machine = plan.machine["name"]
            files[machine] += 1
            for result in plan.results:
                case_fingerprint, benchmark = plan.series[result.series_fingerprint]
                case = plan.cases[case_fingerprint]
                before[(case.group_key, benchmark)] += 1
                after[(case.group_key, machine, benchmark)] += 1
                machines_of[(case.group_key, benchmark)].add(machine)
    table = Table(title=f"series of {', '.join(map(str, folders))}")
    for column in ("machine", "results files", "series", "of them shared with another machine before"):
        table.add_column(column, justify="right" if column != "machine" else "left")
    for machine in sorted(files):
        mine = [key for key in after if key[1] == machine]
        shared = sum(1 for g, _, b in mine if len(machines_of[(g, b)]) > 1)
        table.add_row(machine, f"{files[machine]:,}", f"{len(mine):,}", f"{shared:,}")
    merged = sum(1 for key in before if len(machines_of[key]) > 1)
    table.add_row("all, machine in the key (now)", f"{sum(files.values()):,}", f"{len(after):,}", "")
    table.add_row("all, without it (before 0012)", "", f"{len(before):,}", f"{merged:,} merged")
    console = Console()
    console.print(table)
    if refused:
        console.print(f"{refused} results files refused")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main([Path(arg) for arg in sys.argv[1:]])

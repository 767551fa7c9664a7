"""Scaling efficiency and verdicts of the distributed suite from an asv results directory.

    python scripts/distributed_scaling.py RESULTS_DIR...   (e.g. tests/fixtures/h200x2-distributed*)

For every world-size-N case: the median seconds of forward+backward (slowest rank) at 1 GPU and at N,
their ratio (time at 1 GPU / time at N: 2.0 is perfect strong scaling at 2 GPUs), the interconnect and
the verdict; then the verdict counts. Prints a table per results file; cases a run did not include
(another `--bench` chunk's) are left out.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections import Counter
from pathlib import Path

from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tewatch.runner import results as asv_results

CASE = "distributed.LinearTensorParallel"


def _records(result_file: Path) -> dict[str, dict]:
    cases = asv_results.sidecar_dir(result_file) / "cases"
    records = (json.loads(p.read_text()) for p in sorted(cases.glob("*.json")))
    return {asv_results.case_id(r["case"], r["params"]): r for r in records if r["case"] == CASE}


def _ms(value: float | None) -> str:
    return "—" if value is None or math.isnan(value) else f"{value * 1e3:.3f}"


def table(results_dir: Path, result_file: Path) -> tuple[Table, Counter]:
    benchmarks = asv_results.load(results_dir / "benchmarks.json")
    records = _records(result_file)
    seconds = {}
    for r in asv_results.iter_case_results(asv_results.load(result_file), benchmarks):
        if r.case == CASE:
            p = r.params
            key = (p["recipe"], p["mode"], p["world_size"], p["parallel"], p["sequence_parallel"])
            seconds[key] = None if r.value is None else float(r.value)
    verdicts = Counter(rec["verdict"]["status"] for rec in records.values())
    out = Table(title=f"{result_file.parent.name} / {result_file.stem}")
    for column in (
        "recipe",
        "mode",
        "parallel",
        "SP",
        "ranks",
        "link",
        "1 GPU ms",
        "N GPUs ms",
        "1 GPU / N",
        "verdict",
        "check",
    ):
        out.add_column(column, justify="right" if "ms" in column or "/" in column else "left")
    for (recipe, mode, ws, parallel, sp), value in sorted(seconds.items(), key=lambda kv: str(kv[0])):
        if ws == 1:
            continue
        base = next((v for (r, m, w, _, _), v in seconds.items() if (r, m, w) == (recipe, mode, 1)), None)
        ratio = base / value if base and value and not math.isnan(base) and not math.isnan(value) else None
        rec = records.get(
            asv_results.case_id(
                CASE,
                {
                    "recipe": recipe,
                    "world_size": ws,
                    "parallel": parallel,
                    "sequence_parallel": sp,
                    "mode": mode,
                },
            )
        )
        if rec is None and (value is None or math.isnan(value)):
            continue
        verdict = rec["verdict"] if rec else {"status": "—", "check": ""}
        link = rec["labels"].get("interconnect", "") if rec else ""
        out.add_row(
            recipe,
            mode,
            parallel,
            "on" if sp else "off",
            str(ws),
            link,
            _ms(base),
            _ms(value),
            "—" if ratio is None else f"{ratio:.2f}",
            verdict["status"],
            verdict.get("check", ""),
        )
    return out, verdicts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results_dirs", type=Path, nargs="+", metavar="results_dir")
    args = parser.parse_args()
    console = Console(width=170)
    files = [
        (d, p) for d in args.results_dirs for p in sorted(d.glob("*/*.json")) if p.name != "machine.json"
    ]
    if not files:
        console.print(f"no asv results files under {', '.join(map(str, args.results_dirs))}")
        return 1
    for results_dir, result_file in files:
        out, verdicts = table(results_dir, result_file)
        console.print(out)
        console.print("verdicts: " + ", ".join(f"{k} {v}" for k, v in sorted(verdicts.items())))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

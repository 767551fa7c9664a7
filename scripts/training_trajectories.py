"""The training suite's trajectories without asv, one process: for each case given, the uninterrupted run,
its resume check and the median of a few timed steps; written as JSON and summed up in a table. Run it in
two processes for an A/A, with TEWATCH_PERTURB set for a perturbed arm; `tewatch.detect.trajectory` learns
its band from such repeats (docs/training.md).

    python scripts/training_trajectories.py --profile full --cases te/bf16/eager,te/fp8-current/graphed \\
        --out arm-a.json
    python scripts/training_trajectories.py --compare arm-a.json arm-b.json   # largest |loss difference|
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

STEP_SAMPLES = 10


def run_case(case: str, profile: str) -> dict[str, Any]:
    from benchmarks.harness.profiles import get_profile
    from benchmarks.training import TrainingRun

    backend, recipe, execution = case.split("/")
    shape = get_profile(profile).training
    device = get_profile(profile).device
    started = time.perf_counter()
    entry: dict[str, Any] = {
        "case": case,
        "profile": profile,
        "perturb": os.environ.get("TEWATCH_PERTURB", ""),
    }
    try:
        with tempfile.TemporaryDirectory(prefix="tewatch-trajectories-") as folder:
            run = TrainingRun(backend, recipe, execution, shape, device, Path(folder))
            from benchmarks.harness import records

            record = records.CaseRecord(case="training.TrainSteps", params={}, labels={})
            uninterrupted = run.trajectory(record=record, phase=lambda _: None)
            entry["trajectory"] = uninterrupted.to_json()
            check = run.resume_check(uninterrupted)
            entry["resume"] = {"status": check.status, "value": check.value}
            entry["step_seconds"] = _median_step(run, shape, device)
    except Exception as exc:  # a case that cannot run here is a row of the table, not the end of the run
        entry["error"] = f"{type(exc).__name__}: {str(exc)[:2000]}"
    entry["wall_seconds"] = time.perf_counter() - started
    return entry


def _median_step(run: Any, shape: Any, device: str) -> float:
    import torch

    batches = run.stream.step_batches(1, shape.micro_batches, device)
    samples = []
    for _ in range(STEP_SAMPLES):
        if device == "cuda":
            torch.cuda.synchronize()
        begun = time.perf_counter()
        run.trainer.step(batches)
        if device == "cuda":
            torch.cuda.synchronize()
        samples.append(time.perf_counter() - begun)
    return statistics.median(samples)


def largest_difference(a: list, b: list) -> tuple[float, int | None]:
    worst, first = 0.0, None
    for step, (x, y) in enumerate(zip(a, b, strict=False), start=1):
        diff = float("inf") if (x is None) != (y is None) else 0.0 if x is None else abs(x - y)
        if diff > 0 and first is None:
            first = step
        worst = max(worst, diff)
    return worst, first


def compare(paths: list[Path]) -> None:
    arms = [{e["case"]: e for e in json.loads(p.read_text())["cases"]} for p in paths]
    print(f"{'case':28} {'arm':24} {'final loss':>10} {'max |dloss|':>12} {'first step':>10}")
    for case, first in arms[0].items():
        base = first.get("trajectory", {}).get("loss", [])
        for path, arm in zip(paths, arms, strict=True):
            entry = arm.get(case, {})
            loss = entry.get("trajectory", {}).get("loss", [])
            worst, step = largest_difference(base, loss)
            final = f"{loss[-1]:.5f}" if loss and loss[-1] is not None else entry.get("error", "-")[:10]
            print(f"{case:28} {path.stem[:24]:24} {final:>10} {worst:12.3g} {step or '-':>10}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="full")
    parser.add_argument("--cases", default="te/bf16/eager", help="backend/recipe/execution, comma-separated")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--compare", type=Path, nargs="+")
    args = parser.parse_args()
    if args.compare:
        compare(args.compare)
        return
    from benchmarks.training import EXECUTIONS, RECIPES

    for case in args.cases.split(","):
        backend, _, rest = case.partition("/")
        recipe, _, execution = rest.partition("/")
        if recipe not in RECIPES.get(backend, ()) or execution not in EXECUTIONS:
            parser.error(f"{case!r} is no backend/recipe/execution of the training suite")
    os.environ.setdefault("NVTE_ALLOW_NONDETERMINISTIC_ALGO", "0")
    cases = []
    for case in args.cases.split(","):
        entry = run_case(case, args.profile)
        cases.append(entry)
        loss = entry.get("trajectory", {}).get("loss") or [None]
        print(
            f"{case:28} final loss {loss[-1]!s:>22}  resume {entry.get('resume', {}).get('status', '-'):5} "
            f"step {entry.get('step_seconds', 0) * 1e3:8.2f} ms  wall {entry['wall_seconds']:6.1f} s "
            f"{entry.get('error', '')}",
            flush=True,
        )
        if args.out:
            args.out.write_text(json.dumps({"cases": cases}, indent=1))


if __name__ == "__main__":
    main()

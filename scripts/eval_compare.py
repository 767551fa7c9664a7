"""Pull-request comparisons without history, on replayed H200 noise: false verdicts and recall with and
without each benchmark's spread of level changes as the run-to-run noise (detector 2.2 and 2.1's rule).

Each sweep is one family of CASES cases (one benchmark), two processes per case drawn from a noise profile
(a process level, then tight samples around it): the H200 probe's (service/detect/noise.py), and profiles
fitted to the kept H200 runs of TE 2.20.2 (tests/fixtures: four runs of each quick-profile case on three
lent machines). A quarter of the cases really change by the given step in the head run. Prints one row
per profile and step.

    .venv/bin/python scripts/eval_compare.py --sweeps 200 --cases 24
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table
from tewatch.detect.compare import CompareVerdict, compare_sweep
from tewatch.detect.noise import H200_PROFILES, NoiseProfile, from_samples
from tewatch.ingest.asv_files import samples_by_case

KEPT_RUNS = ("h200-full", "h200-quick", "h200-campaign/base-results", "h200-quick-rerun")
FAMILIES = {"quantize": "quantize.Quantize.track_seconds", "gemm": "gemm.Gemm.track_seconds",
            "linear": "linear.LinearFwdBwd.track_seconds"}

STEPS = (0.0, 0.05, 0.10, 0.30)
SAMPLES = 50
FLAGGED = (CompareVerdict.regression, CompareVerdict.improvement)


def kept_profiles(fixtures: Path) -> dict[str, NoiseProfile]:
    """Per family, the process medians of every case that all kept runs timed, each divided by that case's
    median over the runs, pooled; and the median spread of a run's samples."""
    runs = [samples_by_case(fixtures / folder) for folder in KEPT_RUNS]
    profiles = {}
    for name, benchmark in FAMILIES.items():
        keys = [k for k in runs[0] if k[0] == benchmark and all(k in run for run in runs)]
        medians = np.array([[np.median(run[k]) for run in runs] for k in keys])
        spreads = [np.std(np.log(run[k])) for k in keys for run in runs]
        profiles[f"{name} (kept runs)"] = from_samples(
            name, (medians / np.median(medians, axis=1, keepdims=True)).ravel(), float(np.median(spreads)))
    return profiles


def sweep(profile: NoiseProfile, cases: int, step: float, rng: np.random.Generator) -> tuple[list, np.ndarray]:
    changed = np.arange(cases) < (cases // 4 if step else 0)
    levels = profile.process_levels(rng, (2, cases))
    pairs = [(profile.samples(rng, levels[0, i], SAMPLES),
              profile.samples(rng, levels[1, i] * (1 + step * changed[i]), SAMPLES), False, None)
             for i in range(cases)]
    return pairs, changed


def score(profile: NoiseProfile, cases: int, step: float, sweeps: int, seed: int) -> dict[str, tuple[float, float]]:
    """rule -> (false verdicts per sweep among unchanged cases, share of changed cases found)."""
    rng = np.random.default_rng(seed)
    false = {"2.1": 0, "2.2": 0}
    found = {"2.1": 0, "2.2": 0}
    total_changed = 0
    for _ in range(sweeps):
        pairs, changed = sweep(profile, cases, step, rng)
        total_changed += int(changed.sum())
        for rule, families in (("2.1", None), ("2.2", ["benchmark"] * cases)):
            verdicts = [c.verdict for c in compare_sweep(pairs, families=families)]
            false[rule] += sum(v in FLAGGED for v, c in zip(verdicts, changed) if not c)
            found[rule] += sum(v is CompareVerdict.regression for v, c in zip(verdicts, changed) if c)
    return {rule: (false[rule] / sweeps, found[rule] / total_changed if total_changed else float("nan"))
            for rule in false}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sweeps", type=int, default=200)
    parser.add_argument("--cases", type=int, default=24)
    parser.add_argument("--seed", type=int, default=20261130)
    args = parser.parse_args()
    table = Table(title=f"PR comparisons without history: {args.sweeps} sweeps of {args.cases} cases, "
                        f"{SAMPLES} samples a run, a quarter of the cases changed")
    for column in ("profile", "step", "false/sweep 2.1", "false/sweep 2.2", "recall 2.1", "recall 2.2"):
        table.add_column(column, justify="right")
    fixtures = Path(__file__).resolve().parents[1] / "tests" / "fixtures"
    for name, profile in {**H200_PROFILES, **kept_profiles(fixtures)}.items():
        for step in STEPS:
            result = score(profile, args.cases, step, args.sweeps, args.seed)
            recall = [f"{result[r][1] * 100:.0f} %" if step else "" for r in ("2.1", "2.2")]
            table.add_row(f"{name} {profile.measured_across_cv * 100:.1f} %", f"+{step * 100:.0f} %",
                          f"{result['2.1'][0]:.2f}", f"{result['2.2'][0]:.2f}", *recall)
    Console().print(table)


if __name__ == "__main__":
    main()

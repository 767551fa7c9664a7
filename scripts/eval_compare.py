"""Pull-request comparisons on replayed H200 noise: one run per side against K interleaved A/B rounds.

The noise is fitted per family and metric to runs kept from lent H200s (tests/fixtures/h200-ab-quick and
h200-ab-subset: on each of two machines, TE 2.20.2's quick-profile cases measured twice, once as the base
and once as an A/A arm, each case in its own process, with event and kernel time). A case's process level
is drawn from the pooled, sign-symmetrised log level differences of those pairs (each divided by sqrt 2,
one process's share), so their heavy tails stay (a bf16 te.Linear whose kernel time moved by 12 % in one
process); its samples spread around that level by the family's median within-process spread.

Each sweep is CASES cases of one family; in a change sweep a quarter of them really change by the step.
K = 1 is one run per side (the single-run rule, with the benchmark's spread); K >= 2 are paired rounds.
Prints, per profile and K: A/A false verdicts per 100 cases and the share of cases `unchanged`, and the
recall at +5 %, +10 % and +30 %.

    .venv/bin/python scripts/eval_compare.py --sweeps 40 --cases 100
"""

from __future__ import annotations

import argparse
import math
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table

from tewatch.detect.compare import ComparePair, CompareVerdict, Side, compare_sweep
from tewatch.ingest.asv_files import samples_by_case

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures"
# (base, A/A arm) of one machine each
PAIRS = (
    ("h200-ab-quick/base-results", "h200-ab-quick/aa-results"),
    ("h200-ab-subset/base-results", "h200-ab-subset/aa-results"),
)
FAMILIES = {
    "quantize": "quantize.Quantize",
    "gemm": "gemm.Gemm",
    "linear": "linear.LinearFwdBwd",
    "contracts": "contracts.",
}
STEPS = (0.05, 0.10, 0.30)
ROUNDS = (1, 2, 3, 5)
SAMPLES = 30
FLAGGED = (CompareVerdict.regression, CompareVerdict.improvement)


@dataclass(frozen=True)
class Fitted:
    name: str
    process_deviations: np.ndarray  # log units, one process's deviation from the case's level
    within_sigma: float  # log spread of one process's samples

    @property
    def robust_sigma(self) -> float:
        return float(np.median(np.abs(self.process_deviations)) / 0.6745)

    def side(self, rng: np.random.Generator, rounds: int, shift: float) -> Side:
        levels = rng.choice(self.process_deviations, rounds)
        parts = [
            (1 + shift) * math.exp(level) * np.exp(rng.normal(0, self.within_sigma, SAMPLES))
            for level in levels
        ]
        return Side(np.concatenate(parts), [SAMPLES] * rounds if rounds > 1 else None)


def _kernel_samples(folder: Path) -> dict[tuple[str, tuple], list[float]]:
    import json

    found = {}
    for path in folder.glob("*/*.tewatch/cases/*.json"):
        record = json.loads(path.read_text())
        samples = record.get("metrics", {}).get("kernel_seconds", {}).get("samples")
        if samples:
            found[(f"{record['case']}.kernel_seconds", tuple(sorted(record["params"].items())))] = samples
    return found


def fitted_profiles() -> dict[str, Fitted]:
    deviations: dict[str, list[float]] = defaultdict(list)
    spreads: dict[str, list[float]] = defaultdict(list)
    for base_folder, again_folder in PAIRS:
        for reader in (samples_by_case, _kernel_samples):
            base, again = reader(FIXTURES / base_folder), reader(FIXTURES / again_folder)
            for key in set(base) & set(again):
                family = next((f for f, prefix in FAMILIES.items() if key[0].startswith(prefix)), None)
                if family is None or len(base[key]) < 5 or len(again[key]) < 5:
                    continue
                metric = "kernel" if key[0].endswith("kernel_seconds") else "event"
                name = f"{family} {metric}"
                change = math.log(np.median(again[key]) / np.median(base[key])) / math.sqrt(2)
                deviations[name] += [change, -change]
                spreads[name] += [float(np.std(np.log(base[key]))), float(np.std(np.log(again[key])))]
    return {
        name: Fitted(name, np.array(values), float(np.median(spreads[name])))
        for name, values in sorted(deviations.items())
        if len(values) >= 8
    }


def score(profile: Fitted, cases: int, rounds: int, sweeps: int, seed: int) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    false = unchanged = 0
    found = dict.fromkeys(STEPS, 0)
    changed_total = 0
    for _ in range(sweeps):
        aa = [
            ComparePair(
                profile.side(rng, rounds, 0.0),
                profile.side(rng, rounds, 0.0),
                family=profile.name,
                paired=rounds > 1,
            )
            for _ in range(cases)
        ]
        verdicts = [c.verdict for c in compare_sweep(aa)]
        false += sum(v in FLAGGED for v in verdicts)
        unchanged += sum(v is CompareVerdict.unchanged for v in verdicts)
        changed = cases // 4
        changed_total += changed
        for step in STEPS:
            pairs = [
                ComparePair(
                    profile.side(rng, rounds, 0.0),
                    profile.side(rng, rounds, step if i < changed else 0.0),
                    family=profile.name,
                    paired=rounds > 1,
                )
                for i in range(cases)
            ]
            results = compare_sweep(pairs)
            found[step] += sum(c.verdict is CompareVerdict.regression for c in results[:changed])
    return {
        "false": false / sweeps * 100 / cases,
        "unchanged": unchanged / (sweeps * cases),
        **{f"recall {step}": found[step] / changed_total for step in STEPS},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sweeps", type=int, default=40)
    parser.add_argument("--cases", type=int, default=100)
    parser.add_argument("--seed", type=int, default=20261201)
    args = parser.parse_args()
    table = Table(
        title=f"PR comparisons on replayed H200 noise: {args.sweeps} sweeps of {args.cases} cases, "
        f"{SAMPLES} samples a process, a quarter of the cases changed"
    )
    for column in (
        "family, metric",
        "process σ",
        "K",
        "A/A false /100",
        "A/A unchanged",
        "+5 %",
        "+10 %",
        "+30 %",
    ):
        table.add_column(column, justify="right")
    for name, profile in fitted_profiles().items():
        for rounds in ROUNDS:
            result = score(profile, args.cases, rounds, args.sweeps, args.seed)
            table.add_row(
                name,
                f"{profile.robust_sigma * 100:.2f} %",
                str(rounds),
                f"{result['false']:.2f}",
                f"{result['unchanged'] * 100:.0f} %",
                *(f"{result[f'recall {step}'] * 100:.0f} %" for step in STEPS),
            )
    Console().print(table)


if __name__ == "__main__":
    main()

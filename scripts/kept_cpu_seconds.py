"""A metric of every case of a kept H200 campaign in each of its arms, side by side, with each round's
value: the base, the A/A arm (identical code) and the perturbed heads; and the A/A arm's ratio to the
base, the noise of identical code that a change must exceed to be seen.

    .venv/bin/python scripts/kept_cpu_seconds.py                      # tests/fixtures/h200-kernels-ab, us
    .venv/bin/python scripts/kept_cpu_seconds.py --kept h200-host-delay-quiet
    .venv/bin/python scripts/kept_cpu_seconds.py --metric syncs_per_call --scale 1
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures"
# results folder -> the arm's name, in the order they are printed
ARMS = {
    "base-results": "base",
    "aa-results": "A/A",
    "head-results": "head",
    "host-head-results": "head 2",
}


def metric_by_case(results: Path, metric: str) -> dict[str, tuple[float, list[float]]]:
    """Case label (as the service writes it) -> the metric's value in this arm's records, and its value
    in each A/B round where the arm ran several."""
    found = {}
    for path in sorted(results.glob("vm-h200/*.tewatch/cases/*.json")):
        record = json.loads(path.read_text())
        value = record.get("metrics", {}).get(metric)
        if value is not None:
            params = ", ".join(f"{k}={v}" for k, v in sorted(record.get("params", {}).items()))
            rounds = record.get("round_values", {}).get(metric, [])
            found[f"{record['case']}({params})"] = (float(value["value"]), [float(r) for r in rounds])
    return found


def cell(found: tuple[float, list[float]] | None, scale: float) -> str:
    if found is None:
        return "-"
    value, rounds = found
    return "/".join(f"{r * scale:.0f}" for r in rounds) if len(rounds) > 1 else f"{value * scale:.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--kept", default="h200-kernels-ab", help="the fixture folder under tests/fixtures")
    parser.add_argument("--metric", default="cpu_seconds")
    parser.add_argument("--scale", type=float, default=1e6, help="multiply values by this (1e6: us)")
    args = parser.parse_args()
    kept = FIXTURES / args.kept
    arms = {
        name: metric_by_case(kept / folder, args.metric)
        for folder, name in ARMS.items()
        if (kept / folder).is_dir()
    }
    width = max((len(label) for label in arms["base"]), default=4)
    print(f"{args.metric} x {args.scale:g} ({args.kept}; a/b: the value of each A/B round)")
    print(f"{'case':{width}} " + " ".join(f"{name:>13}" for name in arms) + f" {'A/A / base':>10}")
    for label in sorted(arms["base"]):
        cells = " ".join(f"{cell(arm.get(label), args.scale):>13}" for arm in arms.values())
        base, same = arms["base"].get(label), arms.get("A/A", {}).get(label)
        ratio = f"{same[0] / base[0]:10.2f}" if base and base[0] and same else f"{'-':>10}"
        print(f"{label:{width}} {cells} {ratio}")


if __name__ == "__main__":
    main()

"""A metric of every case of the kept H200 kernel campaigns (tests/fixtures/h200-kernels-ab) in each arm,
side by side: the base, the A/A arm (identical code), the head with a host sync per call and a kernel
split, the head with a 30 us host delay per call and a graph break; and the A/A arm's ratio to the base,
the noise of identical code that a change must exceed to be seen.

    .venv/bin/python scripts/kept_cpu_seconds.py                      # cpu_seconds per call, in us
    .venv/bin/python scripts/kept_cpu_seconds.py --metric syncs_per_call --scale 1
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

KEPT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "h200-kernels-ab"
ARMS = {
    "base": "base-results",
    "A/A": "aa-results",
    "sync+split": "head-results",
    "delay+break": "host-head-results",
}


def metric_by_case(results: Path, metric: str) -> dict[str, float]:
    """Case label (as the service writes it) -> the metric's value in this arm's records."""
    found = {}
    for path in sorted(results.glob("vm-h200/*.tewatch/cases/*.json")):
        record = json.loads(path.read_text())
        value = record.get("metrics", {}).get(metric)
        if value is not None:
            params = ", ".join(f"{k}={v}" for k, v in sorted(record.get("params", {}).items()))
            found[f"{record['case']}({params})"] = float(value["value"])
    return found


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--metric", default="cpu_seconds")
    parser.add_argument("--scale", type=float, default=1e6, help="multiply values by this (1e6: us)")
    args = parser.parse_args()
    arms = {name: metric_by_case(KEPT / folder, args.metric) for name, folder in ARMS.items()}
    width = max((len(label) for label in arms["base"]), default=4)
    print(f"{args.metric} x {args.scale:g}")
    print(f"{'case':{width}} " + " ".join(f"{name:>11}" for name in ARMS) + f" {'A/A / base':>10}")
    for label in sorted(arms["base"]):
        values = [arms[name].get(label) for name in ARMS]
        cells = " ".join(f"{v * args.scale:11.1f}" if v is not None else f"{'-':>11}" for v in values)
        base, same = values[0], values[1]
        ratio = f"{same / base:10.2f}" if base and same is not None else f"{'-':>10}"
        print(f"{label:{width}} {cells} {ratio}")


if __name__ == "__main__":
    main()

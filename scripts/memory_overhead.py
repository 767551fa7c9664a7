"""What measuring memory costs a run: the seconds every GPU case spent in its memory calls (the lines
`tewatch-memory-seconds: S CASE_ID` it printed to stderr, kept in the sidecar's asv-stderr.log.gz) beside
the run's wall time (run.json), per suite and in all, for each results folder given.

    python scripts/memory_overhead.py tests/fixtures/h200-memnum-ab/base-results ...

With --profile RESULTS (a whole profile's run without memory, e.g. the quick profile's base in
tests/fixtures/h200-aa-quick), an estimate for that profile: each suite's mean memory seconds per case
measured here times that run's GPU-timed cases of the suite (those with kernel time) and its A/B rounds,
over its wall time.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
from collections import defaultdict
from pathlib import Path

MARKER = re.compile(r"tewatch-memory-seconds: ([0-9.]+) (\S+)")


def sidecars(results: Path) -> list[Path]:
    return sorted(p for p in results.glob("*/*.tewatch") if p.is_dir())


def memory_seconds(sidecar: Path) -> dict[str, float]:
    """case id -> seconds its memory calls took (the last line of each case: a later round replaces it)."""
    log = sidecar / "asv-stderr.log.gz"
    text = (
        gzip.decompress(log.read_bytes()).decode()
        if log.exists()
        else (sidecar / "asv-stderr.log").read_text()
    )
    return {case_id: float(seconds) for seconds, case_id in MARKER.findall(text)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="+", type=Path)
    parser.add_argument("--profile", type=Path, help="a whole profile's results folder, for the estimate")
    args = parser.parse_args()
    per_suite: dict[str, list[float]] = defaultdict(list)
    print(f"{'results':<48} {'suite':<10} {'cases':>5} {'memory s':>9} {'wall s':>8} {'share':>7}")
    for results in args.results:
        for sidecar in sidecars(results):
            wall = json.loads((sidecar / "run.json").read_text())["wall_seconds"]
            found = memory_seconds(sidecar)
            by_suite: dict[str, list[float]] = defaultdict(list)
            for case_id, seconds in found.items():
                by_suite[case_id.split(".")[0]].append(seconds)
            for suite, values in sorted(by_suite.items()):
                per_suite[suite] += values
                print(f"{str(results)[-48:]:<48} {suite:<10} {len(values):>5} {sum(values):>9.3f}")
            total = sum(found.values())
            print(
                f"{str(results)[-48:]:<48} {'all':<10} {len(found):>5} {total:>9.3f} {wall:>8.1f} {total / wall:>7.2%}"
            )
    if args.profile:
        estimate(args.profile, per_suite)


def estimate(profile: Path, per_suite: dict[str, list[float]]) -> None:
    for sidecar in sidecars(profile):
        run = json.loads((sidecar / "run.json").read_text())
        wall, rounds = run["wall_seconds"], run.get("ab", {}).get("rounds", 1)  # every round measures again
        timed: dict[str, int] = defaultdict(int)
        for path in (sidecar / "cases").glob("*.json"):
            record = json.loads(path.read_text())
            if "kernel_seconds" in record.get("metrics", {}):
                timed[record["case"].split(".")[0]] += 1
        seconds = 0.0
        for suite, count in sorted(timed.items()):
            measured = per_suite.get(suite)
            if not measured:
                print(f"  {suite}: {count} cases, none measured here: left out of the estimate")
                continue
            seconds += rounds * count * sum(measured) / len(measured)
        cases = sum(timed.values())
        name = f"estimate for {str(profile)[-35:]}"
        print(f"{name:<48} {'all':<10} {cases:>5} {seconds:>9.3f} {wall:>8.1f} {seconds / wall:>7.2%}")


if __name__ == "__main__":
    main()

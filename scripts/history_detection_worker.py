"""One detector over many series, timed, for scripts/bench_history_detection.py: run in a process of its
own so that tewatch's detector of another revision (its service/ folder first on PYTHONPATH) and asv's
step detection are timed alike. Imports only what every revision of tewatch.detect.changepoint has.

    python scripts/history_detection_worker.py tewatch|asv IN.pickle OUT.pickle
"""

from __future__ import annotations

import dataclasses
import math
import pickle
import sys
import time

ASV_REGRESSION_THRESHOLD = 0.05  # asv publish's default


def tewatch(series: list[list[float]]) -> list[list[dict]]:
    from tewatch.detect.changepoint import detect_change_points

    return [[dataclasses.asdict(cp) for cp in detect_change_points(values)] for values in series]


def asv(series: list[list[float]]) -> list[dict]:
    """asv's `detect_steps` (its piecewise-constant fit: every segment) and `detect_regressions` at asv
    publish's threshold (what it reports as regressions), per series."""
    from asv import step_detect

    found = []
    for values in series:
        data = [None if not math.isfinite(v) else v for v in values]
        steps = step_detect.detect_steps(data)
        _, _, regressions = step_detect.detect_regressions(steps, ASV_REGRESSION_THRESHOLD)
        found.append({"steps": [tuple(s[:3]) for s in steps], "regressions": list(regressions or [])})
    return found


def main() -> None:
    kind, source, target = sys.argv[1:4]
    with open(source, "rb") as file:
        series = pickle.load(file)
    start = time.process_time()
    found = tewatch(series) if kind == "tewatch" else asv(series)
    seconds = time.process_time() - start
    with open(target, "wb") as file:
        pickle.dump({"found": found, "cpu_seconds": seconds}, file)


if __name__ == "__main__":
    main()

"""Change points along a branch's history, side by side: tewatch's detector as it was (`--before`, a git
revision) and as it is, and asv's own step detection (asv.step_detect of the installed asv), on the same
series in the same order.

Two data sets:
- synthetic histories whose steps are known (tewatch.detect.known_steps: short levels, a 95x level that
  is later halved, reverted regressions, steps next to drifts, clean steps, environment-wide shifts);
- django/django-asv's ubuntu-latest history (../shared/data/ext-django-asv: 6 environments, 356 series),
  one value per commit, commits by the results file's date as the store orders them without a git graph.

Per detector: located (a detection at the step's commit +-1, in its direction), range coverage (of the
steps a detection matched, within 10 commits or by its range: the share its commit range holds), the
median range width, direction right (of those matched), open alerts at the end of the history as the
detector leaves them and the stale share of them (series back at the level before: the median of its
last 10 points nearer the baseline than the level after), recall against what asv reports (its
`detect_regressions` at 5 %: found at the commit +-1, within the range, or explained: asv's level holds
for fewer points than tewatch's persistence, or the rank test finds no change at tewatch's false-alarm
rate and minimum effect between asv's own two segments), and CPU seconds of detection (each detector in a
process of its own, scripts/history_detection_worker.py, the best of --repeat runs).

Open alerts: asv's are its reported regressions; tewatch's before are every regression change point (the
store resolved them only when a change point was withdrawn); tewatch's now follow the pipeline: a
regression the series has undone is resolved (detect.returns), and one shared by most series of an
environment is one alert (detect.shared_shifts), stale when most of its series are.

    .venv/bin/python scripts/bench_history_detection.py [--series 20] [--before febb831] [--no-django]
"""

from __future__ import annotations

import argparse
import io
import itertools
import math
import pickle
import subprocess
import sys
import tarfile
import tempfile
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table

from tewatch.detect.changepoint import ChangePoint, judge_split
from tewatch.detect.config import ChangePointConfig
from tewatch.detect.known_steps import KnownStep, known_histories
from tewatch.detect.returns import returns
from tewatch.detect.shared_shifts import ShiftMember, shared_shifts
from tewatch.detect.version import DETECTOR_VERSION
from tewatch.ingest.archive_series import archive_environments

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared/data/ext-django-asv/django-ubuntu-latest.tar.xz"
WORKER = ROOT / "scripts/history_detection_worker.py"
BEFORE = "febb831"  # detector 3.3: runs of outlying points set aside, one MOSUM window
MATCH_WITHIN = 10
TAIL = 10
CONFIG = ChangePointConfig()


@dataclass
class Series:
    name: str
    group: str  # an environment: the series measured together
    values: np.ndarray
    positions: np.ndarray  # each point's commit on the environment's axis
    steps: tuple[KnownStep, ...] | None = None  # known steps; None on real histories
    scenario: str = ""


@dataclass(frozen=True)
class Detection:
    """What a detector names: where the new level starts, the range it may start in, and the change."""

    index: int
    first: int
    last: int
    effect: float
    baseline: float
    level_after: float


@dataclass
class Found:
    detections: list[list[Detection]]  # per series
    change_points: list[list[ChangePoint]] | None  # tewatch's, per series
    asv_regressions: list[list[tuple]] | None  # asv's, per series
    cpu_seconds: float
    asv_steps: list[list[tuple]] | None = None  # asv's segments (left, right, value), per series


def synthetic(series: int, commits: int, seed: int) -> list[Series]:
    return [
        Series(f"{h.group}/{i}", h.group, h.values, np.arange(commits), h.steps, h.scenario)
        for i, h in enumerate(known_histories(series, commits, seed))
    ]


def django(archive: Path) -> list[Series]:
    found = []
    for env, by_name in sorted(archive_environments(archive).items()):
        axis = sorted(
            {(d, sha) for s in by_name.values() for d, sha in zip(s.dates_ms, s.commits, strict=True)}
        )
        place = {key: i for i, key in enumerate(axis)}
        for name, s in sorted(by_name.items()):
            positions = np.array([place[key] for key in zip(s.dates_ms, s.commits, strict=True)])
            found.append(Series(f"{env} {name}", env, s.values, positions))
    return found


def run_worker(kind: str, series: list[Series], pythonpath: Path, repeat: int) -> dict:
    with tempfile.TemporaryDirectory() as scratch:
        source, target = Path(scratch, "in.pickle"), Path(scratch, "out.pickle")
        source.write_bytes(pickle.dumps([s.values.tolist() for s in series]))
        best = None
        for _ in range(repeat):
            subprocess.run(
                [sys.executable, str(WORKER), kind, str(source), str(target)],
                check=True,
                env={"PYTHONPATH": str(pythonpath), "PATH": "/usr/bin:/bin"},
            )
            result = pickle.loads(target.read_bytes())
            if best is None or result["cpu_seconds"] < best["cpu_seconds"]:
                best = result
        assert best is not None
        return best


def tewatch_found(series: list[Series], pythonpath: Path, repeat: int) -> Found:
    result = run_worker("tewatch", series, pythonpath, repeat)
    cps = [[ChangePoint(**cp) for cp in per_series] for per_series in result["found"]]
    detections = [
        [
            Detection(
                c.index, c.first_possible_index, c.last_possible_index, c.effect, c.baseline, c.level_after
            )
            for c in row
        ]
        for row in cps
    ]
    return Found(detections, cps, None, result["cpu_seconds"])


def asv_found(series: list[Series], repeat: int) -> Found:
    result = run_worker("asv", series, ROOT / "service", repeat)
    detections = []
    for per_series in result["found"]:
        row = []
        for (_, _, before), (left, _, after) in itertools.pairwise(per_series["steps"]):
            jump = after / before - 1.0
            if abs(jump) >= CONFIG.min_effect:
                row.append(Detection(left, left, left, jump, before, after))
        detections.append(row)
    regressions = [per_series["regressions"] for per_series in result["found"]]
    steps = [per_series["steps"] for per_series in result["found"]]
    return Found(detections, None, regressions, result["cpu_seconds"], steps)


def before_tree(revision: str, into: Path) -> Path:
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", revision, "service/tewatch"], check=True, capture_output=True
    ).stdout
    into.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into / "service"


# --- alerts as each detector leaves them at the end of the history


@dataclass
class OpenAlert:
    members: list[tuple[int, float, float]]  # (series, level before, level after)


def stale(series: Series, baseline: float, level_after: float) -> bool:
    finite = series.values[np.isfinite(series.values) & (series.values > 0)]
    last = float(np.median(finite[-TAIL:]))
    return abs(math.log(last / baseline)) < abs(math.log(last / level_after))


def is_stale(alert: OpenAlert, series: list[Series]) -> bool:
    votes = [stale(series[s], before, after) for s, before, after in alert.members]
    return 2 * sum(votes) >= len(votes)


def alerts_each(series: list[Series], found: Found) -> list[OpenAlert]:
    """Every regression its own alert, never resolved."""
    return [
        OpenAlert([(s, d.baseline, d.level_after)])
        for s, row in enumerate(found.detections)
        for d in row
        if d.effect > 0
    ]


def alerts_asv(series: list[Series], found: Found) -> list[OpenAlert]:
    assert found.asv_regressions is not None
    return [
        OpenAlert([(s, before_value, best_after)])
        for s, row in enumerate(found.asv_regressions)
        for _, _, before_value, best_after in row
    ]


def alerts_now(series: list[Series], found: Found) -> list[OpenAlert]:
    """As the pipeline leaves them: undone regressions resolved, shared ones one alert per environment."""
    assert found.change_points is not None
    members: dict[str, list[tuple[int, int]]] = defaultdict(list)
    measured: dict[str, Counter[int]] = defaultdict(Counter)
    back: dict[int, dict[int, int]] = {}
    for s, (one, cps) in enumerate(zip(series, found.change_points, strict=True)):
        back[s] = returns(cps, higher_is_better=False)
        measured[one.group].update(one.positions[np.isfinite(one.values)].tolist())
        members[one.group] += [(s, k) for k, cp in enumerate(cps) if cp.effect > 0]
    alerts = []
    for group, candidates in members.items():
        shift_members = []
        for s, k in candidates:
            cp, positions = found.change_points[s][k], series[s].positions
            commits = frozenset(positions[cp.first_possible_index : cp.last_possible_index + 1].tolist())
            shift_members.append(ShiftMember(s, int(positions[cp.index]), commits))
        folded = set()
        for shift in shared_shifts(shift_members, measured[group]):
            taken = [candidates[i] for i in shift.members]
            folded.update(taken)
            if 2 * sum(k in back[s] for s, k in taken) < len(taken):
                alerts.append(OpenAlert([(s, *_levels(found.change_points[s][k])) for s, k in taken]))
        for s, k in candidates:
            if (s, k) not in folded and k not in back[s]:
                alerts.append(OpenAlert([(s, *_levels(found.change_points[s][k]))]))
    return alerts


def _levels(cp: ChangePoint) -> tuple[float, float]:
    return cp.baseline, cp.level_after


# --- scores


@dataclass
class Score:
    steps: int = 0
    located: int = 0
    matched: int = 0
    covered: int = 0
    direction: int = 0
    widths: list[int] = field(default_factory=list)
    open_alerts: int = 0
    stale_alerts: int = 0
    asv_reported: int = 0
    asv_at_commit: int = 0
    asv_in_range: int = 0
    asv_explained: Counter[str] = field(default_factory=Counter)
    unexplained: list[str] = field(default_factory=list)


def score_steps(score: Score, one: Series, detections: list[Detection]) -> None:
    for step in one.steps or ():
        score.steps += 1
        right = [d for d in detections if np.sign(d.effect) == np.sign(step.change)]
        score.located += any(abs(d.index - step.at) <= 1 for d in right)
        near = [
            d for d in detections if d.first <= step.at <= d.last or abs(d.index - step.at) <= MATCH_WITHIN
        ]
        if near:
            d = min(near, key=lambda d: abs(d.index - step.at))
            score.matched += 1
            score.covered += d.first <= step.at <= d.last
            score.direction += np.sign(d.effect) == np.sign(step.change)
            score.widths.append(d.last - d.first + 1)


def explain(one: Series, regression: tuple, asv_steps: list[tuple]) -> str | None:
    """Why tewatch has no regression at asv's: None where nothing explains it."""
    after = regression[1]
    measured = np.flatnonzero(np.isfinite(one.values) & (one.values > 0))
    segment = next(((left, right) for left, right, _ in asv_steps if left == after), None)
    if (
        segment is not None
        and np.count_nonzero((measured >= segment[0]) & (measured < segment[1])) < CONFIG.persistence
    ):
        return f"asv's level holds for fewer than {CONFIG.persistence} commits"
    previous = next(((left, right) for left, right, _ in asv_steps if right - 1 == regression[0]), None)
    if previous is None or segment is None:
        return None
    x = np.log(one.values[measured])
    lo, t, hi = (int(np.searchsorted(measured, i)) for i in (previous[0], after, segment[1]))
    if not judge_split(x, lo, t, hi, CONFIG).passes:
        return "no change between asv's two segments at tewatch's false-alarm rate and minimum effect"
    return None


def score_asv_recall(
    score: Score, s: int, one: Series, detections: list[Detection], asv: Found, steps: list
) -> None:
    assert asv.asv_regressions is not None
    for regression in asv.asv_regressions[s]:
        after = regression[1]
        score.asv_reported += 1
        regressions = [d for d in detections if d.effect > 0]
        if any(abs(d.index - after) <= 1 for d in regressions):
            score.asv_at_commit += 1
        elif any(d.first <= after <= d.last for d in regressions):
            score.asv_in_range += 1
        elif (reason := explain(one, regression, steps)) is not None:
            score.asv_explained[reason] += 1
        else:
            nearest = min((abs(d.index - after) for d in regressions), default=None)
            score.unexplained.append(
                f"{one.name} at {after} ({regression[3] / regression[2] - 1:+.1%}): "
                + ("no regression" if nearest is None else f"nearest regression {nearest} commits away")
            )


def scores(
    series: list[Series], found: Found, asv: Found, asv_steps: list[list], alerts: list[OpenAlert]
) -> dict[str, Score]:
    by: dict[str, Score] = defaultdict(Score)
    for s, one in enumerate(series):
        key = one.scenario or "django-asv"
        score_steps(by[key], one, found.detections[s])
        score_asv_recall(by[key], s, one, found.detections[s], asv, asv_steps[s])
    for alert in alerts:
        key = series[alert.members[0][0]].scenario or "django-asv"
        by[key].open_alerts += 1
        by[key].stale_alerts += is_stale(alert, series)
    return by


def percent(part: int, whole: int) -> str:
    return f"{part / whole:.0%}" if whole else "—"


def row(score: Score, asv_row: bool) -> list[str]:
    recall = (
        "—"
        if asv_row or not score.asv_reported
        else f"{percent(score.asv_at_commit, score.asv_reported)} at +-1, "
        f"{percent(score.asv_at_commit + score.asv_in_range + sum(score.asv_explained.values()), score.asv_reported)} "
        f"found or explained ({score.asv_reported})"
    )
    return [
        percent(score.located, score.steps),
        percent(score.covered, score.matched),
        f"{np.median(score.widths):.0f}" if score.widths else "—",
        percent(score.direction, score.matched),
        f"{score.stale_alerts} of {score.open_alerts} ({percent(score.stale_alerts, score.open_alerts)})",
        recall,
    ]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--series", type=int, default=20, help="synthetic histories per scenario")
    parser.add_argument("--commits", type=int, default=300)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--before", default=BEFORE, help="git revision of the detector to compare with")
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--no-django", action="store_true")
    parser.add_argument("--repeat", type=int, default=2, help="timed runs per detector, the best kept")
    parser.add_argument("--unexplained", type=int, default=15, help="misses of asv's regressions to list")
    args = parser.parse_args()
    console = Console(width=200)
    data_sets = {"synthetic": synthetic(args.series, args.commits, args.seed)}
    if not args.no_django and args.data.exists():
        data_sets["django-asv"] = django(args.data)
    timing = Table(title="detection time (CPU seconds, each detector in a process of its own, best of runs)")
    for column in (
        "data set",
        "series",
        "points",
        f"tewatch {args.before}",
        "tewatch now",
        "now / before",
        "asv",
    ):
        timing.add_column(column, justify="right")
    with tempfile.TemporaryDirectory() as scratch:
        old_path = before_tree(args.before, Path(scratch))
        for name, series in data_sets.items():
            console.print(f"{name}: {len(series)} series, detecting ...")
            asv = asv_found(series, 1)
            before = tewatch_found(series, old_path, args.repeat)
            now = tewatch_found(series, ROOT / "service", args.repeat)
            asv_steps = asv.asv_steps or []
            table = Table(title=f"{name}: located, ranges, direction, alerts and recall against asv")
            for column in (
                "scenario",
                "detector",
                "located +-1",
                "range coverage",
                "range width",
                "direction right",
                "stale open alerts",
                "recall vs asv's regressions",
            ):
                table.add_column(column)
            results = {
                "asv": scores(series, asv, asv, asv_steps, alerts_asv(series, asv)),
                f"tewatch {args.before}": scores(series, before, asv, asv_steps, alerts_each(series, before)),
                "tewatch now": scores(series, now, asv, asv_steps, alerts_now(series, now)),
            }
            for scenario in results["tewatch now"]:
                for i, (detector, by) in enumerate(results.items()):
                    table.add_row(
                        scenario if i == 0 else "",
                        detector,
                        *row(by[scenario], detector == "asv"),
                        end_section=i == 2,
                    )
            console.print(table)
            misses = [line for score in results["tewatch now"].values() for line in score.unexplained]
            explained = sum((score.asv_explained for score in results["tewatch now"].values()), Counter())
            for reason, count in explained.items():
                console.print(f"  explained ({count}): {reason}")
            console.print(f"  asv's regressions neither found nor explained: {len(misses)}")
            for line in misses[: args.unexplained]:
                console.print(f"    {line}")
            points = sum(int(np.isfinite(s.values).sum()) for s in series)
            timing.add_row(
                name,
                str(len(series)),
                f"{points:,}",
                f"{before.cpu_seconds:.2f}",
                f"{now.cpu_seconds:.2f}",
                f"{now.cpu_seconds / before.cpu_seconds:.2f}",
                f"{asv.cpu_seconds:.2f}",
            )
    console.print(timing)
    console.print(f"tewatch now: {DETECTOR_VERSION}")


if __name__ == "__main__":
    main()

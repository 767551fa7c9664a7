"""Replay series with injected steps on measured H200 noise; score the detector next to asv's.

Every series has `commits` points of noise from one profile (noise.py), a few gaps (skipped or
unsupported runs), and either no step or one step of a given size and direction at a random commit in
the middle three fifths. Beside them, the shapes of shapes.py: a huge jump onto a noisier level on the
newest commits, a change in the share of slow runs of a two-speed benchmark, and that benchmark's steady
shares. A detection within `tolerance` commits of the injected change is a hit; any other detection is a
false alarm. Seeded: the same arguments give the same tables.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

import numpy as np

from tewatch.detect.changepoint import detect_change_points
from tewatch.detect.config import ChangePointConfig
from tewatch.detect.noise import H200_PROFILES, NoiseProfile
from tewatch.detect.shapes import Shape, django_shapes

Detector = Callable[[np.ndarray], list["Found"]]


@dataclass(frozen=True)
class Found:
    """A detection: its point estimate and the range of commits it names (a bisection range)."""

    index: int
    first: int
    last: int

    def matches(self, step_at: int, tolerance: int) -> bool:
        return abs(self.index - step_at) <= tolerance or self.first <= step_at <= self.last


@dataclass(frozen=True)
class Scenario:
    profile: NoiseProfile
    step: float  # relative size, signed; 0 means no step


@dataclass(frozen=True)
class ReplaySeries:
    scenario: Scenario | None  # None: a shape's series
    values: np.ndarray  # NaN where the run was skipped
    step_at: int | None


def with_gaps(
    values: np.ndarray, step_at: int | None, rng: np.random.Generator, gap_fraction: float
) -> tuple[np.ndarray, int | None]:
    values[rng.random(len(values)) < gap_fraction] = np.nan
    if step_at is not None and np.isnan(values[step_at]):
        # the change lands on the first measured commit at or after it
        later = np.flatnonzero(np.isfinite(values[step_at:]))
        step_at = step_at + int(later[0]) if len(later) else None
    return values, step_at


@dataclass
class Score:
    series: int = 0
    commits: int = 0
    steps: int = 0
    hits: int = 0
    detections: int = 0
    false_alarms: int = 0
    by_step: dict[float, list[int]] = field(default_factory=dict)  # |step| -> [hits, steps]

    range_widths: list[int] = field(default_factory=list)
    null_false_alarms: int = 0

    def add(self, replay: ReplaySeries, found: list[Found], tolerance: int) -> None:
        self.series += 1
        self.commits += int(np.isfinite(replay.values).sum())
        self.detections += len(found)
        hit = replay.step_at is not None and any(f.matches(replay.step_at, tolerance) for f in found)
        matched = 1 if hit else 0
        self.false_alarms += len(found) - matched
        if replay.step_at is None:
            self.null_false_alarms += len(found)
        self.range_widths.extend(f.last - f.first + 1 for f in found)
        if replay.step_at is not None:
            size = round(abs(replay.scenario.step), 4) if replay.scenario else 0.0
            tally = self.by_step.setdefault(size, [0, 0])
            tally[0] += matched
            tally[1] += 1
            self.steps += 1
            self.hits += matched

    def recall(self, size: float) -> float:
        hits, steps = self.by_step.get(round(size, 4), [0, 0])
        return hits / steps if steps else float("nan")

    @property
    def precision(self) -> float:
        true = self.detections - self.false_alarms
        return true / self.detections if self.detections else float("nan")

    @property
    def false_alarms_per_1000(self) -> float:
        return 1000.0 * self.false_alarms / self.commits if self.commits else float("nan")


def replay_series(
    profiles: Iterable[NoiseProfile],
    step_sizes: Iterable[float],
    series_per_scenario: int,
    commits: int,
    gap_fraction: float,
    seed: int,
) -> Iterator[ReplaySeries]:
    rng = np.random.default_rng(seed)
    sizes = [0.0] + [s * sign for s in step_sizes for sign in (1.0, -1.0)]
    for profile in profiles:
        for step in sizes:
            scenario = Scenario(profile=profile, step=step)
            for _ in range(series_per_scenario):
                values = profile.commit_values(rng, (commits,))
                step_at = None
                if step:
                    step_at = int(rng.integers(commits // 5, commits - commits // 5))
                    values[step_at:] *= 1.0 + step
                values, step_at = with_gaps(values, step_at, rng, gap_fraction)
                yield ReplaySeries(scenario=scenario, values=values, step_at=step_at)


def replay_shapes(
    shapes: Iterable[Shape], series_per_shape: int, commits: int, gap_fraction: float, seed: int
) -> Iterator[tuple[Shape, ReplaySeries]]:
    rng = np.random.default_rng([seed, 1])  # a stream of its own: the steps' replay stays as it was
    for shape in shapes:
        for _ in range(series_per_shape):
            values, step_at = with_gaps(*shape.make(rng, commits), rng, gap_fraction)
            yield shape, ReplaySeries(scenario=None, values=values, step_at=step_at)


def tewatch_detector(config: ChangePointConfig) -> Detector:
    def detect(values: np.ndarray) -> list[Found]:
        return [
            Found(cp.index, cp.first_possible_index, cp.last_possible_index)
            for cp in detect_change_points(values, config)
        ]

    return detect


def asv_detector(threshold: float) -> Detector:
    """asv's own step detection: every boundary of `detect_steps` whose relative jump >= threshold.

    asv's `detect_regressions` looks only upwards (slower); reading the segment boundaries directly
    gives it both directions, as this harness asks of every detector.
    """
    from asv import step_detect

    def detect(values: np.ndarray) -> list[Found]:
        data = [None if not np.isfinite(v) else float(v) for v in values]
        steps = step_detect.detect_steps(data)
        found = []
        for before, after in itertools.pairwise(steps):
            if abs(after[2] / before[2] - 1.0) >= threshold:
                # asv's own range: from the last point of the old level to the first of the new one
                found.append(Found(after[0], before[1], after[0]))
        return found

    return detect


@dataclass
class Evaluation:
    scores: dict[tuple[str, str], Score]  # (detector, profile) -> score
    step_sizes: list[float]
    commits: int
    series_per_scenario: int
    shape_scores: dict[tuple[str, str], Score] = field(default_factory=dict)  # (detector, shape) -> score
    shapes: list[Shape] = field(default_factory=list)


def evaluate(
    detectors: dict[str, Detector],
    profiles: Iterable[NoiseProfile] | None = None,
    step_sizes: Iterable[float] = (0.03, 0.05, 0.10),
    series_per_scenario: int = 60,
    commits: int = 300,
    gap_fraction: float = 0.05,
    tolerance: int = 5,
    seed: int = 20261129,
    progress: Callable[[int], None] | None = None,
    shapes: Iterable[Shape] | None = None,
) -> Evaluation:
    """`shapes`: None for django_shapes on the profiles, [] for none."""
    profiles = list(profiles or H200_PROFILES.values())
    step_sizes = list(step_sizes)
    shapes = django_shapes(profiles) if shapes is None else list(shapes)
    scores: dict[tuple[str, str], Score] = {}
    replays = replay_series(profiles, step_sizes, series_per_scenario, commits, gap_fraction, seed)
    for replay in replays:
        assert replay.scenario is not None  # replay_series gives every series its scenario
        for name, detect in detectors.items():
            score = scores.setdefault((name, replay.scenario.profile.name), Score())
            score.add(replay, detect(replay.values), tolerance)
        if progress:
            progress(1)
    shape_scores: dict[tuple[str, str], Score] = {}
    for shape, replay in replay_shapes(shapes, series_per_scenario, commits, gap_fraction, seed):
        for name, detect in detectors.items():
            shape_scores.setdefault((name, shape.name), Score()).add(replay, detect(replay.values), tolerance)
        if progress:
            progress(1)
    return Evaluation(scores, step_sizes, commits, series_per_scenario, shape_scores, shapes)


def combined(evaluation: Evaluation, detector: str) -> Score:
    total = Score()
    for (name, _), score in evaluation.scores.items():
        if name != detector:
            continue
        total.series += score.series
        total.commits += score.commits
        total.steps += score.steps
        total.hits += score.hits
        total.detections += score.detections
        total.false_alarms += score.false_alarms
        total.null_false_alarms += score.null_false_alarms
        total.range_widths.extend(score.range_widths)
        for size, (hits, steps) in score.by_step.items():
            tally = total.by_step.setdefault(size, [0, 0])
            tally[0] += hits
            tally[1] += steps
    return total

"""Change points in one series: both directions, a minimum effect, a persistence rule, robust to outliers.

One commit's value is one process's median, and processes differ: on an H200 the noise is a core spread
(2-6 %) plus occasional outlying processes 15-30 % slower (noise.py). The method, on the logarithm of the
values (so effects are relative and noise is roughly constant):

1. Gaps (skipped, unsupported, failed runs) are simply absent: the series is the finite positive points.
2. Outlying runs are set aside: a first pass (steps 3-5) segments the series, and points further than
   outlier_k robust sigmas (1.4826 x median absolute deviation) from the median of their segment are
   left out of the second, final pass. Against the segment's median rather than a running one, a cluster
   of outlying processes cannot hide itself; a real step is a segment boundary, so its points stay. The
   sigma is the pooled one or the segment's own, whichever is larger, and a segment of two speeds
   (speeds.py) measures each point from the median of its own speed. A run of outlying points on one
   side that holds for `persistence` points and is too long to be chance is a level, not outliers: it
   stays, and its edges and the first pass's change points are candidates of the second pass.
3. Screening: sigma_core is the median absolute first difference / (0.6745 * sqrt 2); each point is
   clipped to its 5-point running median +- winsor_k * sigma_core, sigma is the root mean square first
   difference of the clipped points / sqrt 2, and at every split t the clipped means of up to `window`
   points before and after give z(t) = (mean_after - mean_before) / (sigma * sqrt(1/n_before +
   1/n_after)). Local maxima of |z| over z_screen are candidates (MOSUM), and so is the split of the
   whole series with the largest rank statistic (binary segmentation's first step: a window of 60 points
   is too short for a 3 % step in 6 % noise, the whole history is not).
4. Confirmation: each candidate is tested on the whole segments between its neighbours (up to
   max_segment points each) with the Mann-Whitney rank test. The weakest candidate that fails is merged
   away and its neighbours re-tested, until every survivor passes. A candidate passes when both segments
   hold at least `persistence` points, |z| exceeds the critical value of the largest rank statistic over
   all splits of a segment that long (critical_z: pure noise yields a change point in a segment with
   probability false_alarm_rate, whatever its distribution), and the Hodges-Lehmann shift is at least
   log(1 + min_effect). On two speeds the share of slow runs is tested beside the ranks, each test at
   half the rate.
   Then every segment between confirmed change points offers its own strongest split (binary
   segmentation continued, each of S segments at false_alarm_rate / S), until none is confirmed: a
   window wider than a short level mixes its two edges.
5. Survivors move to the split with the largest rank statistic on their neighbouring segments, within
   `window` of where they were (where the sides hardly overlap, to the least absolute deviation among
   the splits as likely as that one), and are confirmed once more.
6. Each reports the range of commits where its change may have happened: the splits whose likelihood
   (z^2 / 2 of the rank statistic) is within a factor 200 of the best one. For a step between known
   levels such a range misses the change with probability about 2/200 (the log-likelihood away from the
   change is a random walk whose drift is half its variance), so it holds the culprit 99 % of the time.
   The change starts at the first kept point after it, or earlier at points set aside before that which
   lie nearer the level after than the baseline; the range always holds that start
   (scripts/bench_history_detection.py measures how often it holds the true step).

Every change point carries its baseline, limits, effect, z and the indices of the points on each side.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view
from numpy.typing import ArrayLike

from tewatch.detect.config import ChangePointConfig
from tewatch.detect.distributions import median_of
from tewatch.detect.speeds import share_split_curve, share_z, slow_threshold

_MAD_TO_SIGMA_OF_DIFFS = 1.0 / (0.6744897501960817 * np.sqrt(2.0))
_MAD_TO_SIGMA = 1.482602218505602
_RANGE_SUPPORT = np.log(200.0)
SATURATED = 0.9


@dataclass(frozen=True)
class ChangePoint:
    """A level change between points `before_index` and `index` of the input (input positions, gaps kept).

    first_possible_index..last_possible_index: where the first changed point may lie (support interval).

    baseline: the median of the segment before; level_after: baseline times the Hodges-Lehmann shift
    (median of all differences after - before), so that effect = level_after / baseline - 1 is the shift
    the test judged. lower_limit/upper_limit: the values between which the level after would have
    counted as unchanged.
    """

    index: int
    before_index: int
    first_possible_index: int
    last_possible_index: int
    baseline: float
    level_after: float
    lower_limit: float
    upper_limit: float
    effect: float
    z: float
    sigma: float
    n_before: int
    n_after: int


def robust_sigma(x: np.ndarray, floor: float) -> float:
    if len(x) < 3:
        return floor
    return max(median_of(np.abs(np.diff(x))) * _MAD_TO_SIGMA_OF_DIFFS, floor)


def clipped_sigma(clipped: np.ndarray, floor: float) -> float:
    """Noise of the clipped points: what the tests must use, since clipped outliers still spread more
    than the core of the distribution that the median absolute difference measures."""
    return max(float(np.sqrt(0.5 * np.mean(np.diff(clipped) ** 2))), floor)


def running_median5(x: np.ndarray) -> np.ndarray:
    padded = np.pad(x, 2, mode="edge")
    return np.partition(sliding_window_view(padded, 5), 2, axis=1)[:, 2]


def clip_outliers(x: np.ndarray, sigma: float, k: float) -> np.ndarray:
    centre = running_median5(x)
    return np.clip(x, centre - k * sigma, centre + k * sigma)


def screen(csum: np.ndarray, sigma: float, config: ChangePointConfig) -> list[int]:
    """Split positions whose windowed |z| is a local maximum above z_screen."""
    n = len(csum) - 1
    p = config.persistence
    if n < 2 * p:
        return []
    t = np.arange(p, n - p + 1)
    n_before = np.minimum(t, config.window)
    n_after = np.minimum(n - t, config.window)
    mean_before = (csum[t] - csum[t - n_before]) / n_before
    mean_after = (csum[t + n_after] - csum[t]) / n_after
    z = np.abs(mean_after - mean_before) / (sigma * np.sqrt(1.0 / n_before + 1.0 / n_after))
    left = np.concatenate(([-np.inf], z[:-1]))
    right = np.concatenate((z[1:], [-np.inf]))
    peaks = np.flatnonzero((z >= config.z_screen) & (z >= left) & (z > right))
    # MOSUM-style: of peaks closer than a quarter window, only the strongest stays a candidate
    radius = max(config.window // 4, config.persistence)
    kept: list[int] = []
    for i in peaks[np.argsort(-z[peaks], kind="stable")]:
        if all(abs(int(t[i]) - j) > radius for j in kept):
            kept.append(int(t[i]))
    return sorted(kept)


def rank_z(before: np.ndarray, after: np.ndarray) -> float:
    """Mann-Whitney U of after against before as a z-score; positive when after is higher."""
    a, b = len(before), len(after)
    ordered = np.sort(before)
    u = 0.5 * float(
        np.sum(np.searchsorted(ordered, after, "left") + np.searchsorted(ordered, after, "right"))
    )
    return (u - 0.5 * a * b) / np.sqrt(a * b * (a + b + 1) / 12.0)


def rank_split_curve(segment: np.ndarray) -> np.ndarray:
    """|Mann-Whitney z| of [s, m) against [0, s) for every split s = 1 .. m-1 (Pettitt's statistic)."""
    m = len(segment)
    ranks = np.empty(m)
    ranks[np.argsort(segment, kind="stable")] = np.arange(1, m + 1)
    n_before = np.arange(1, m)
    n_after = m - n_before
    rank_sum_after = np.cumsum(ranks[::-1])[::-1][1:]
    u = rank_sum_after - n_after * (n_after + 1) / 2.0
    return np.abs(u - n_before * n_after / 2.0) / np.sqrt(n_before * n_after * (m + 1) / 12.0)


@lru_cache(maxsize=4096)
def critical_z(n: int, false_alarm_rate: float, persistence: int) -> float:
    """The |z| that the largest rank statistic over the splits persistence .. n - persistence of n
    exchangeable points exceeds with probability `false_alarm_rate`.

    Siegmund's approximation for the maximum of a standardized two-sample statistic over a set of splits,
    with his correction for splits being discrete (an overshoot factor exp(-a c / sqrt(n u (1 - u)))):

        P(max |z| > c) ~ c phi(c) sum_t exp(-a c / sqrt(n u (1 - u))) / (n u (1 - u)),  u = t / n.

    a = 0.8 is fitted to simulations of the rank statistic itself: for n from 20 to 500 and rates of 1 to
    5 %, the simulated rate is 0.75 to 1.3 times the nominal one (tests/detect/test_changepoint.py checks
    it). Ranks make the rate the same for every continuous noise distribution.
    """
    if n < 2 * persistence:
        return float("inf")
    u = np.arange(persistence, n - persistence + 1) / n
    spread = n * u * (1.0 - u)
    root = np.sqrt(spread)

    def exceed(c: float) -> float:
        return (
            c * np.exp(-0.5 * c * c) / np.sqrt(2.0 * np.pi) * float(np.sum(np.exp(-0.8 * c / root) / spread))
        )

    low, high = 1.0, 12.0
    while high - low > 1e-4:
        mid = 0.5 * (low + high)
        low, high = (mid, high) if exceed(mid) > false_alarm_rate else (low, mid)
    return high


def hodges_lehmann(before: np.ndarray, after: np.ndarray) -> float:
    """Median of all differences after - before: the shift estimate that goes with the rank test."""
    return float(np.median(np.subtract.outer(after, before)))


@dataclass(frozen=True)
class SplitTest:
    passes: bool
    strength: float  # min(|z| / critical z, |shift| / min shift): below 1 fails
    z: float
    critical: float


def _sides(
    x: np.ndarray, lo: int, t: int, hi: int, config: ChangePointConfig
) -> tuple[np.ndarray, np.ndarray]:
    return x[max(lo, t - config.max_segment) : t], x[t : min(hi, t + config.max_segment)]


def shift_reaches(before: np.ndarray, after: np.ndarray, shift: float) -> bool:
    """Whether the Hodges-Lehmann shift reaches `shift` (signed): at least half of all differences
    after - before lie at or beyond it. Counted by binary search, without forming the differences."""
    ordered = np.sort(before)
    if shift >= 0:
        beyond = np.searchsorted(ordered, after - shift, "right").sum()
    else:
        beyond = (len(ordered) - np.searchsorted(ordered, after - shift, "left")).sum()
    return 2 * int(beyond) >= len(before) * len(after)


def two_speeds(x: np.ndarray, config: ChangePointConfig) -> float | None:
    """The log value between the two speeds of x, or None (speeds.py)."""
    return slow_threshold(
        x,
        config.speed_share,
        config.speed_gap,
        config.speed_separation,
        float(np.log1p(config.min_effect)),
        config.persistence,
    )


def split_curve(segment: np.ndarray, config: ChangePointConfig) -> np.ndarray:
    """The rank statistic of every split; on two speeds the larger of it and the share test's."""
    curve = rank_split_curve(segment)
    threshold = two_speeds(segment, config)
    return curve if threshold is None else np.maximum(curve, share_split_curve(segment > threshold))


def judge_split(
    x: np.ndarray, lo: int, t: int, hi: int, config: ChangePointConfig, passes_only: bool = False
) -> SplitTest:
    """Segments [lo, t) and [t, hi), each cut to max_segment points nearest the split. On two speeds
    the share of slow runs is tested beside the ranks, each at half the false-alarm rate. With
    `passes_only` (confirmation, which needs no more), a split whose ranks pass even at half the rate
    is not looked at for two speeds: it passes either way."""
    before, after = _sides(x, lo, t, hi, config)
    z = rank_z(before, after)
    rate = config.false_alarm_rate
    settled = passes_only and abs(z) >= critical_z(len(before) + len(after), rate / 2.0, config.persistence)
    threshold = None if settled else two_speeds(np.concatenate((before, after)), config)
    if threshold is not None:
        rate /= 2.0
        by_share = share_z(before > threshold, after > threshold)
        z = by_share if abs(by_share) > abs(z) else z
    critical = critical_z(len(before) + len(after), rate, config.persistence)
    strength = abs(z) / critical
    if len(before) < config.persistence or len(after) < config.persistence:
        return SplitTest(False, strength, z, critical)
    min_shift = np.log1p(config.min_effect)
    if strength >= 1.0 and not shift_reaches(before, after, float(np.copysign(min_shift, z))):
        shift = float(np.copysign(hodges_lehmann(before, after), z))  # in the direction of z
        return SplitTest(False, min(strength, max(shift, 0.0) / min_shift), z, critical)
    return SplitTest(strength >= 1.0, strength, z, critical)


def _segment_bounds(cps: list[int], k: int, n: int, config: ChangePointConfig) -> tuple[int, int]:
    lo = cps[k - 1] if k > 0 else 0
    hi = cps[k + 1] if k + 1 < len(cps) else n
    return max(lo, cps[k] - config.max_segment), min(hi, cps[k] + config.max_segment)


def strongest_split(x: np.ndarray, config: ChangePointConfig) -> list[int]:
    """The split of the whole series with the largest rank statistic (and share test, on two speeds)."""
    p = config.persistence
    if len(x) < 2 * p:
        return []
    splits = [p + int(np.argmax(rank_split_curve(x)[p - 1 : len(x) - p]))]
    threshold = two_speeds(x, config)
    if threshold is not None:
        splits.append(p + int(np.argmax(share_split_curve(x > threshold)[p - 1 : len(x) - p])))
    return splits


def absolute_deviation_cost(segment: np.ndarray, split: int) -> float:
    """Sum of absolute deviations of each side of `split` from its own median."""
    before, after = segment[:split], segment[split:]
    return float(np.abs(before - median_of(before)).sum() + np.abs(after - median_of(after)).sum())


def separation(before: np.ndarray, after: np.ndarray) -> float:
    """|2 P(after > before) - 1|: 1 when the two sides do not overlap at all."""
    a, b = len(before), len(after)
    return abs(rank_z(before, after)) / np.sqrt(3.0 * a * b / (a + b + 1.0))


def refine(x: np.ndarray, cps: list[int], config: ChangePointConfig) -> list[int]:
    """Move each change point to the split of its neighbouring segments with the largest rank statistic,
    searching within `window` of where screening put it.

    Where the sides hardly overlap (separation at least SATURATED, at either split), ranks cannot place
    the step: an
    outlying old point next to it ranks like the new level, and without overlap |z| = sqrt(3 n_before
    n_after / (m + 1)) grows towards the middle, so a jump on the newest 18 points was placed among the
    old ones. There the split is the one, among those whose rank statistic is as likely as the best one's
    (the factor of location_range), that leaves the least absolute deviation from each side's median."""
    refined = list(cps)
    for k, t in enumerate(cps):
        lo, hi = _segment_bounds(cps, k, len(x), config)
        segment_x = x[lo:hi]
        z = split_curve(segment_x, config)
        splits = lo + np.arange(1, hi - lo)
        allowed = (
            (splits - lo >= config.persistence)
            & (hi - splits >= config.persistence)
            & (np.abs(splits - t) <= config.window)
        )
        if not allowed.any():
            continue
        best = int(np.argmax(np.where(allowed, z, -1.0)))
        refined[k] = int(splits[best])
        if (
            max(
                separation(segment_x[: t - lo], segment_x[t - lo :]),
                separation(segment_x[: best + 1], segment_x[best + 1 :]),
            )
            >= SATURATED
        ):
            supported = splits[allowed & (z**2 >= z[best] ** 2 - 2.0 * _RANGE_SUPPORT)] - lo
            cost = [absolute_deviation_cost(segment_x, int(split)) for split in supported]
            refined[k] = lo + int(supported[int(np.argmin(cost))])
    return sorted(set(refined))


def location_range(x: np.ndarray, cps: list[int], k: int, config: ChangePointConfig) -> tuple[int, int]:
    """The splits whose likelihood is within a factor 200 of the best one (z^2 / 2 of the rank statistic
    as the log-likelihood): where the change may have happened, with about 99 % confidence."""
    lo, hi = _segment_bounds(cps, k, len(x), config)
    z = split_curve(x[lo:hi], config)
    best = cps[k] - lo - 1
    supported = z**2 >= z[best] ** 2 - 2.0 * _RANGE_SUPPORT
    first = last = best
    while first > 0 and supported[first - 1]:
        first -= 1
    while last + 1 < len(z) and supported[last + 1]:
        last += 1
    return lo + first + 1, lo + last + 1


Judge = Callable[[int, int, int], SplitTest]


def split_judge(x: np.ndarray, config: ChangePointConfig) -> Judge:
    """judge_split on one series, each split between the same neighbours judged once: confirmation
    re-tests the same segments as candidates come and go."""

    @functools.cache
    def judge(lo: int, t: int, hi: int) -> SplitTest:
        return judge_split(x, lo, t, hi, config, passes_only=True)

    return lambda lo, t, hi: judge(max(lo, t - config.max_segment), t, min(hi, t + config.max_segment))


def confirm(
    x: np.ndarray, candidates: list[int], config: ChangePointConfig, judge: Judge | None = None
) -> list[int]:
    """Merge away the weakest failing candidate until all pass; only neighbours of a merge are re-tested."""
    cps = sorted(set(candidates))
    n = len(x)
    judge = judge or split_judge(x, config)

    def test(k: int) -> SplitTest:
        lo = cps[k - 1] if k > 0 else 0
        hi = cps[k + 1] if k + 1 < len(cps) else n
        return judge(lo, cps[k], hi)

    tests = [test(k) for k in range(len(cps))]
    while cps:
        failing = [k for k, result in enumerate(tests) if not result.passes]
        if not failing:
            break
        weakest = min(failing, key=lambda k: tests[k].strength)
        del cps[weakest]
        del tests[weakest]
        for k in (weakest - 1, weakest):
            if 0 <= k < len(cps):
                tests[k] = test(k)
    return cps


def segment(x: np.ndarray, config: ChangePointConfig, known: tuple[int, ...] = ()) -> tuple[list[int], float]:
    """Steps 3-5 on log values without gaps: the confirmed change points and the screening sigma.
    `known`: more candidate splits (the first pass's change points and the edges of its runs of outliers)."""
    clipped = clip_outliers(x, robust_sigma(x, config.sigma_floor), config.winsor_k)
    sigma = clipped_sigma(clipped, config.sigma_floor)
    csum = np.concatenate(([0.0], np.cumsum(clipped)))
    p = config.persistence
    candidates = (
        screen(csum, sigma, config) + strongest_split(x, config) + [t for t in known if p <= t <= len(x) - p]
    )
    if not candidates:
        return [], sigma
    judge = split_judge(x, config)
    cps = confirm(x, candidates, config, judge)
    if not known:
        cps = split_segments(x, cps, config, judge)
    if cps:
        cps = confirm(x, refine(x, cps, config), config, judge)
    return cps, sigma


def split_segments(x: np.ndarray, cps: list[int], config: ChangePointConfig, judge: Judge) -> list[int]:
    """Binary segmentation continued: the strongest split of every segment between confirmed change
    points is a candidate too, until no segment yields one that is confirmed. A window wider than a
    short level mixes its two edges (a step up and back down 21 commits later screens as one peak); the
    segment on its own shows the second edge. Each of S segments is searched at false_alarm_rate / S, so
    that the search adds no more false alarms to a series than one test of it would."""
    while True:
        bounds = [0, *cps, len(x)]
        strict = replace(config, false_alarm_rate=config.false_alarm_rate / (len(bounds) - 1))
        splits = [
            a + t
            for a, b in itertools.pairwise(bounds)
            for t in strongest_split(x[a:b], config)
            if judge_split(x, a, a + t, b, strict).passes
        ]
        if not splits:
            return cps
        grown = confirm(x, cps + splits, config, judge)
        if len(grown) <= len(cps):
            return cps
        cps = grown


def outlying_side(x: np.ndarray, cps: list[int], config: ChangePointConfig) -> np.ndarray:
    """+1 (-1) for points further than outlier_k robust sigmas above (below) the median of their segment,
    0 for the rest: the sigma pooled over all segments, or the segment's own where that is larger (a new
    level may be noisier than the old ones, and its points are its level, not outliers). A segment of two
    speeds has two levels: each point is measured from the median of its own speed, with the larger of
    the speeds' own sigmas."""
    bounds = [0, *cps, len(x)]
    parts, own = [], []
    for a, b in itertools.pairwise(bounds):
        part = x[a:b]
        threshold = two_speeds(part, config)
        if threshold is None:
            residual = part - median_of(part)
            own.append(_MAD_TO_SIGMA * median_of(np.abs(residual)))
        else:
            slow = part > threshold
            residual = np.where(slow, part - median_of(part[slow]), part - median_of(part[~slow]))
            own.append(
                _MAD_TO_SIGMA * max(median_of(np.abs(residual[slow])), median_of(np.abs(residual[~slow])))
            )
        parts.append(residual)
    pooled = max(_MAD_TO_SIGMA * median_of(np.abs(np.concatenate(parts))), config.sigma_floor)
    return np.concatenate(
        [
            np.sign(part) * (np.abs(part) > config.outlier_k * max(pooled, sigma))
            for part, sigma in zip(parts, own, strict=True)
        ]
    ).astype(int)


def persistent_runs(side: np.ndarray, config: ChangePointConfig) -> list[tuple[int, int]]:
    """[start, end) of every run of consecutive points outlying on the same side that is a level, not a
    run of outlying processes: it holds for `persistence` points, as any level must, and is too long to
    be chance. With a share q of the other points outlying on that side, n points hold a run of L or
    more by chance about n q^L times; a run counts as a level where that is below a tenth of
    false_alarm_rate, so that runs add little to the false alarms of the rank test (an H200's quantize,
    15 % of its processes outlying, has 5 in a row in 2 % of 300-point series)."""
    n = len(side)
    bounds = np.flatnonzero(np.diff(side, prepend=0, append=0)) if side.any() else np.array([], dtype=int)
    runs = []
    for start, end in itertools.pairwise(bounds):
        length = int(end - start)
        if side[start] == 0 or length < config.persistence:
            continue
        others = (int(np.count_nonzero(side == side[start])) - length) / max(n - length, 1)
        if n * others**length <= 0.1 * config.false_alarm_rate:
            runs.append((int(start), int(end)))
    return runs


def detect_change_points(values: ArrayLike, config: ChangePointConfig | None = None) -> list[ChangePoint]:
    """Change points of a series; NaN, None and non-positive values are gaps and simply absent."""
    config = config or ChangePointConfig()
    y = np.asarray(values, dtype=float)
    measured = np.flatnonzero(np.isfinite(y) & (y > 0))
    if len(measured) < 2 * config.persistence:
        return []
    x = logs = np.log(y[measured])
    cps, sigma = segment(x, config)
    side = outlying_side(x, cps, config)
    levels = persistent_runs(side, config)
    for start, end in levels:
        side[start:end] = 0
    core = side == 0
    if levels or not core.all():
        if core.sum() < 2 * config.persistence:
            return []
        kept_before = np.cumsum(core) - core  # core points before each point: its index once x is cut
        splits = [*cps, *(t for run in levels for t in run if t < len(x))]
        x = x[core]
        cps, sigma = segment(x, config, tuple(int(kept_before[t]) for t in splits))
    position = np.flatnonzero(core)  # of each core point among the measured ones
    found = []
    for k, t in enumerate(cps):
        lo, hi = _segment_bounds(cps, k, len(x), config)
        before, after = _sides(x, lo, t, hi, config)
        result = judge_split(x, lo, t, hi, config)
        first, last = location_range(x, cps, k, config)
        baseline, shift = float(np.median(before)), hodges_lehmann(before, after)
        # the shift the rank test needed, in normal-equivalent log units (pi/3: the test's efficiency)
        margin = max(
            np.log1p(config.min_effect),
            result.critical * sigma * np.sqrt((1.0 / len(before) + 1.0 / len(after)) * np.pi / 3),
        )
        found.append(
            ChangePoint(
                index=int(measured[first_on_new_level(logs, position[t - 1], position[t], baseline, shift)]),
                before_index=int(measured[position[t - 1]]),
                # a set-aside point just before the range may be the first changed one
                first_possible_index=int(measured[position[first - 1] + 1]),
                last_possible_index=int(measured[position[last]]),
                baseline=float(np.exp(baseline)),
                level_after=float(np.exp(baseline + shift)),
                lower_limit=float(np.exp(baseline - margin)),
                upper_limit=float(np.exp(baseline + margin)),
                effect=float(np.expm1(shift)),
                z=float(result.z),
                sigma=sigma,
                n_before=len(before),
                n_after=len(after),
            )
        )
    return found


def first_on_new_level(logs: np.ndarray, before: int, after: int, baseline: float, shift: float) -> int:
    """Where the new level starts among the measured points: `after`, the first kept point past the step,
    or a point set aside between it and `before` (the last kept point before the step) from which on
    every set-aside point lies nearer the level after than the baseline."""
    at = after
    while at - 1 > before and abs(logs[at - 1] - baseline - shift) < abs(logs[at - 1] - baseline):
        at -= 1
    return at

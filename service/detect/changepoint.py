"""Change points in one series: both directions, a minimum effect, a persistence rule, robust to outliers.

The method, on the logarithm of the values (so effects are relative and noise is roughly constant):

1. Gaps (skipped, unsupported, failed runs) are simply absent: the series is the finite positive points.
2. Outliers: sigma_core is the median absolute first difference / (0.6745 * sqrt 2); a step moves a
   single difference and an outlier two, so neither inflates it. Each point is clipped to its 5-point
   running median +- winsor_k * sigma_core. A lone spike (a throttled process, a noisy host) loses its
   weight; a real step passes, since the running median follows it after two points.
3. Noise: sigma is the root mean square first difference of the clipped points / sqrt 2 (clipped
   outliers still spread more than the core).
4. Screening: at every split t the clipped means of up to `window` points before and after give
   z(t) = (mean_after - mean_before) / (sigma * sqrt(1/n_before + 1/n_after)). Local maxima of |z| over
   z_screen are candidates.
5. Confirmation (Hunter's weak/strong passes): each candidate is tested on the whole segments between its
   neighbours (up to max_segment points each). The weakest candidate that fails is merged away and its
   neighbours re-tested, until every survivor passes. Survivors then move to the split with the largest
   rank statistic on their neighbouring segments (screening locates steps only roughly in heavy noise)
   and are confirmed once more. Each reports the range of commits where its change may have happened. A candidate passes when both neighbouring segments
   hold at least `persistence` points and the level after lies outside the limits
   baseline * exp(+-max(log(1 + min_effect), z_confirm * standard error)).

Every change point carries its baseline, limits, effect, z and the indices of the points on each side.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view
from numpy.typing import ArrayLike
from tewatch.detect.config import ChangePointConfig

_MAD_TO_SIGMA_OF_DIFFS = 1.0 / (0.6744897501960817 * np.sqrt(2.0))


@dataclass(frozen=True)
class ChangePoint:
    """A level change between points `before_index` and `index` of the input (input positions, gaps kept).

    first_possible_index..last_possible_index: where the first changed point may lie (support interval).

    baseline/level_after: the clipped geometric means of the segments before and after.
    lower_limit/upper_limit: the values between which the level after would have counted as unchanged.
    effect: level_after / baseline - 1.
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
    return max(float(np.median(np.abs(np.diff(x)))) * _MAD_TO_SIGMA_OF_DIFFS, floor)


def clipped_sigma(clipped: np.ndarray, floor: float) -> float:
    """Noise of the clipped points: what the tests must use, since clipped outliers still spread more
    than the core of the distribution that the median absolute difference measures."""
    return max(float(np.sqrt(0.5 * np.mean(np.diff(clipped) ** 2))), floor)


def running_median5(x: np.ndarray) -> np.ndarray:
    padded = np.pad(x, 2, mode="edge")
    return np.median(sliding_window_view(padded, 5), axis=1)


def clip_outliers(x: np.ndarray, sigma: float, k: float) -> np.ndarray:
    centre = running_median5(x)
    return np.clip(x, centre - k * sigma, centre + k * sigma)


def screen(csum: np.ndarray, sigma: float, config: ChangePointConfig) -> np.ndarray:
    """Split positions whose windowed |z| is a local maximum above z_screen."""
    n = len(csum) - 1
    p = config.persistence
    if n < 2 * p:
        return np.empty(0, dtype=np.int64)
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
    return np.array(sorted(kept), dtype=np.int64)


@dataclass(frozen=True)
class SplitTest:
    passes: bool
    strength: float  # min(|z| / z_confirm, |shift| / min shift): below 1 fails
    z: float
    median_before: float
    median_after: float
    margin: float
    n_before: int
    n_after: int


def rank_z(before: np.ndarray, after: np.ndarray) -> float:
    """Mann-Whitney U of after against before as a z-score; positive when after is higher."""
    a, b = len(before), len(after)
    ordered = np.sort(before)
    u = 0.5 * float(np.sum(np.searchsorted(ordered, after, "left") + np.searchsorted(ordered, after, "right")))
    return (u - 0.5 * a * b) / np.sqrt(a * b * (a + b + 1) / 12.0)


def test_split(x: np.ndarray, lo: int, t: int, hi: int, sigma: float, config: ChangePointConfig) -> SplitTest:
    """Segments [lo, t) and [t, hi), each cut to max_segment points nearest the split."""
    before = x[max(lo, t - config.max_segment) : t]
    after = x[t : min(hi, t + config.max_segment)]
    n_before, n_after = len(before), len(after)
    z = rank_z(before, after)
    median_before, median_after = float(np.median(before)), float(np.median(after))
    min_shift = np.log1p(config.min_effect)
    # the shift the rank test needed, in normal-equivalent log units (pi/3: the test's efficiency)
    margin = max(min_shift, config.z_confirm * sigma * np.sqrt((1.0 / n_before + 1.0 / n_after) * np.pi / 3))
    shift = abs(median_after - median_before)
    strength = min(abs(z) / config.z_confirm, shift / min_shift)
    passes = n_before >= config.persistence and n_after >= config.persistence and strength >= 1.0
    return SplitTest(passes, strength, z, median_before, median_after, margin, n_before, n_after)


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


def _segment_bounds(cps: list[int], k: int, n: int, config: ChangePointConfig) -> tuple[int, int]:
    lo = cps[k - 1] if k > 0 else 0
    hi = cps[k + 1] if k + 1 < len(cps) else n
    return max(lo, cps[k] - config.max_segment), min(hi, cps[k] + config.max_segment)


def refine(x: np.ndarray, cps: list[int], config: ChangePointConfig) -> list[int]:
    """Move each change point to the split of its neighbouring segments with the largest rank statistic,
    searching within `window` of where screening put it."""
    refined = list(cps)
    for k, t in enumerate(cps):
        lo, hi = _segment_bounds(cps, k, len(x), config)
        z = rank_split_curve(x[lo:hi])
        splits = lo + np.arange(1, hi - lo)
        allowed = (
            (splits - lo >= config.persistence)
            & (hi - splits >= config.persistence)
            & (np.abs(splits - t) <= config.window)
        )
        if allowed.any():
            refined[k] = int(splits[np.argmax(np.where(allowed, z, -1.0))])
    return sorted(set(refined))


def location_range(x: np.ndarray, cps: list[int], k: int, config: ChangePointConfig) -> tuple[int, int]:
    """The splits whose likelihood is within a factor 32 of the best one (Royall's 1/32 support
    interval, with z^2 / 2 as the log-likelihood): where the change may have happened."""
    lo, hi = _segment_bounds(cps, k, len(x), config)
    z = rank_split_curve(x[lo:hi])
    best = cps[k] - lo - 1
    supported = z**2 >= z[best] ** 2 - 2.0 * np.log(32.0)
    first = last = best
    while first > 0 and supported[first - 1]:
        first -= 1
    while last + 1 < len(z) and supported[last + 1]:
        last += 1
    return lo + first + 1, lo + last + 1


def confirm(x: np.ndarray, candidates: list[int], sigma: float, config: ChangePointConfig) -> list[int]:
    """Merge away the weakest failing candidate until all pass; only neighbours of a merge are re-tested."""
    cps = sorted(set(candidates))
    n = len(x)

    def test(k: int) -> SplitTest:
        lo = cps[k - 1] if k > 0 else 0
        hi = cps[k + 1] if k + 1 < len(cps) else n
        return test_split(x, lo, cps[k], hi, sigma, config)

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


def detect_change_points(values: ArrayLike, config: ChangePointConfig | None = None) -> list[ChangePoint]:
    """Change points of a series; NaN, None and non-positive values are gaps and simply absent."""
    config = config or ChangePointConfig()
    y = np.asarray(values, dtype=float)
    kept = np.flatnonzero(np.isfinite(y) & (y > 0))
    if len(kept) < 2 * config.persistence:
        return []
    x = np.log(y[kept])
    clipped = clip_outliers(x, robust_sigma(x, config.sigma_floor), config.winsor_k)
    sigma = clipped_sigma(clipped, config.sigma_floor)
    csum = np.concatenate(([0.0], np.cumsum(clipped)))
    candidates = screen(csum, sigma, config)
    if len(candidates) == 0:
        return []
    cps = confirm(x, candidates.tolist(), sigma, config)
    cps = confirm(x, refine(x, cps, config), sigma, config)
    bounds = [0, *cps, len(x)]
    found = []
    for k, t in enumerate(cps):
        result = test_split(x, bounds[k], t, bounds[k + 2], sigma, config)
        first, last = location_range(x, cps, k, config)
        found.append(
            ChangePoint(
                index=int(kept[t]),
                before_index=int(kept[t - 1]),
                first_possible_index=int(kept[first]),
                last_possible_index=int(kept[last]),
                baseline=float(np.exp(result.median_before)),
                level_after=float(np.exp(result.median_after)),
                lower_limit=float(np.exp(result.median_before - result.margin)),
                upper_limit=float(np.exp(result.median_before + result.margin)),
                effect=float(np.expm1(result.median_after - result.median_before)),
                z=float(result.z),
                sigma=sigma,
                n_before=result.n_before,
                n_after=result.n_after,
            )
        )
    return found

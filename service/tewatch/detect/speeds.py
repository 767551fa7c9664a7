"""Series whose runs land at one of two speeds, and a test of the share of runs at the slower one.

Some benchmarks run either fast or slow from one process to the next (a cache hit or miss in setup, a
dict resized or not): django-asv's `QCreate.time_create_small` sits at 1.1e-4 s or 1.4e-4 s. A change in
how often it is slow (35 % of runs, then 80 %) moves its median by 25 %, yet the rank test sees it
faintly, because the ranks within each speed are noise. Labelling each run fast or slow and testing the
share of slow runs sees it plainly: the labels carry the change and none of that noise.

Two speeds: a gap between the sorted log values (one of the widest three) leaves at least `share` of
the values on either side, is at least `gap` times the larger robust spread (scaled MAD) of the two
groups and at least the minimum effect wide, and the groups' medians lie `separation` such spreads
apart. Normal or heavy-tailed noise of one level is not two speeds; the occasional outlying process of
an H200 (noise.py: 15 % of processes 15-28 % slower) sometimes is, and then its share is tested too.

The share test is the two-sample test of proportions with Yates' continuity correction, standardized
under permutation (the hypergeometric variance): its largest value over all splits of exchangeable
labels stays within the rank statistic's critical value (changepoint.critical_z), with shares from
10 % to 50 % and 30 to 300 points (tests/detect/test_speeds.py).
"""

from __future__ import annotations

import numpy as np

from tewatch.detect.distributions import median_of

WIDEST_GAPS_TRIED = 3
_MAD_TO_SIGMA = 1.482602218505602


def _middle(ordered: np.ndarray) -> float:
    n = len(ordered)
    return 0.5 * float(ordered[(n - 1) // 2] + ordered[n // 2])


def robust_spread(x: np.ndarray) -> float:
    return _MAD_TO_SIGMA * median_of(np.abs(x - median_of(x)))


def slow_threshold(
    x: np.ndarray, share: float, gap: float, separation: float, min_gap: float, min_points: int
) -> float | None:
    """The log value between the two speeds of `x` (log values), or None when `x` has one speed."""
    values = np.sort(x)
    n = len(values)
    smallest = max(min_points, int(np.ceil(share * n)))
    if n < 2 * smallest:
        return None
    gaps = np.diff(values)
    widest = (
        np.argpartition(gaps, -WIDEST_GAPS_TRIED)[-WIDEST_GAPS_TRIED:]
        if n > WIDEST_GAPS_TRIED + 1
        else np.arange(n - 1)
    )
    for i in widest[np.argsort(gaps[widest])[::-1]]:
        if gaps[i] < min_gap:
            return None  # the widest gaps come first
        if not smallest <= i + 1 <= n - smallest:
            continue
        low, high = values[: i + 1], values[i + 1 :]
        spread = max(robust_spread(low), robust_spread(high))
        if gaps[i] >= gap * spread and _middle(high) - _middle(low) >= separation * spread:
            return float(0.5 * (values[i] + values[i + 1]))
    return None


def share_split_curve(slow: np.ndarray) -> np.ndarray:
    """|z| of the share of slow runs in [s, m) against [0, s) for every split s = 1 .. m-1."""
    m = len(slow)
    k = float(slow.sum())
    n_before = np.arange(1, m)
    n_after = m - n_before
    slow_after = np.cumsum(slow[::-1])[::-1][1:]
    variance = k * (m - k) * n_before * n_after / (m * m * (m - 1.0))
    if k == 0 or k == m:
        return np.zeros(m - 1)
    return np.maximum(np.abs(slow_after - k * n_after / m) - 0.5, 0.0) / np.sqrt(variance)


def share_z(before: np.ndarray, after: np.ndarray) -> float:
    """The share test of one split, signed: positive when `after` (booleans: slow) holds more slow runs."""
    slow = np.concatenate((before, after)).astype(float)
    m, k = len(slow), float(slow.sum())
    if k == 0 or k == m:
        return 0.0
    excess = float(after.sum()) - k * len(after) / m
    variance = k * (m - k) * len(before) * len(after) / (m * m * (m - 1.0))
    return float(np.copysign(max(abs(excess) - 0.5, 0.0), excess) / np.sqrt(variance))

"""The Mann-Whitney U test's two-sided p-value as scipy.stats.mannwhitneyu gives it (method "auto"), computed
here: scipy's per-call argument handling costs more than the test itself, and the comparison sweep runs one
per series. The normal approximation with tie and continuity corrections, or, where a side has 8 or fewer
samples and nothing ties, the exact null distribution of U. Anything not finite is left to scipy."""

from __future__ import annotations

import functools
import math

import numpy as np
from scipy import special, stats

EXACT_UP_TO = 8  # scipy's choice: the exact distribution when a side is this small and nothing ties


def mann_whitney_p(x: np.ndarray, y: np.ndarray) -> float:
    """P-value of the two-sided Mann-Whitney U test of x against y."""
    n1, n2 = len(x), len(y)
    combined = np.concatenate([x, y])
    if n1 == 0 or n2 == 0 or not np.isfinite(combined).all():
        return float(stats.mannwhitneyu(x, y, alternative="two-sided").pvalue)
    _, inverse, counts = np.unique(combined, return_inverse=True, return_counts=True)
    average_rank = np.cumsum(counts) - (counts - 1) / 2
    u1 = float(average_rank[inverse[:n1]].sum()) - n1 * (n1 + 1) / 2
    u = max(u1, n1 * n2 - u1)
    if counts.max() == 1 and min(n1, n2) <= EXACT_UP_TO:
        return min(2 * _exact_upper_tail(min(n1, n2), max(n1, n2))[round(u)], 1.0)
    n = n1 + n2
    tie_term = float(np.sum(counts.astype(float) ** 3 - counts))
    spread = math.sqrt(max(n1 * n2 / 12 * ((n + 1) - tie_term / (n * (n - 1))), 0.0))
    excess = u - n1 * n2 / 2 - 0.5
    if spread == 0:
        return 1.0 if excess <= 0 else 0.0
    return min(float(2 * special.ndtr(-excess / spread)), 1.0)


@functools.lru_cache(maxsize=256)
def _exact_upper_tail(m: int, n: int) -> tuple[float, ...]:
    """P(U >= u) for u = 0 .. m n under the null hypothesis, for sides of m and n samples without ties. The
    number of orderings with U = u is the coefficient of q^u in the Gaussian binomial coefficient
    [m + n, m]_q = prod over i = 1..m of (1 - q^(n + i)) / (1 - q^i), built here in exact integers."""
    ways = [1]
    for i in range(1, m + 1):
        grown = ways + [0] * (n + i)
        for k, count in enumerate(ways):
            grown[k + n + i] -= count
        for k in range(i, len(grown)):  # exact division by (1 - q^i)
            grown[k] += grown[k - i]
        ways = grown[: len(ways) + n]
    total = sum(ways)
    tail, above = [], 0
    for count in reversed(ways):
        above += count
        tail.append(above / total)
    return tuple(reversed(tail))

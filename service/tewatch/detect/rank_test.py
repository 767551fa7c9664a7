"""The Mann-Whitney U test's two-sided p-value as scipy.stats.mannwhitneyu gives it (method "auto"), with the
normal approximation computed here: scipy's per-call argument handling costs more than the test itself, and
the comparison sweep runs one per series. The exact distribution (a side of 8 or fewer samples, no ties) and
anything not finite are left to scipy."""

from __future__ import annotations

import math

import numpy as np
from scipy import special, stats

EXACT_UP_TO = 8  # scipy's choice: the exact distribution when a side is this small and nothing ties


def mann_whitney_p(x: np.ndarray, y: np.ndarray) -> float:
    """P-value of the two-sided Mann-Whitney U test of x against y, continuity and tie corrected."""
    n1, n2 = len(x), len(y)
    combined = np.concatenate([x, y])
    if n1 == 0 or n2 == 0 or not np.isfinite(combined).all():
        return float(stats.mannwhitneyu(x, y, alternative="two-sided").pvalue)
    _, inverse, counts = np.unique(combined, return_inverse=True, return_counts=True)
    tied = bool(counts.max() > 1)
    if not tied and min(n1, n2) <= EXACT_UP_TO:
        return float(stats.mannwhitneyu(x, y, alternative="two-sided").pvalue)
    average_rank = np.cumsum(counts) - (counts - 1) / 2
    u1 = float(average_rank[inverse[:n1]].sum()) - n1 * (n1 + 1) / 2
    u = max(u1, n1 * n2 - u1)
    n = n1 + n2
    tie_term = float(np.sum(counts.astype(float) ** 3 - counts))
    spread = math.sqrt(max(n1 * n2 / 12 * ((n + 1) - tie_term / (n * (n - 1))), 0.0))
    excess = u - n1 * n2 / 2 - 0.5
    if spread == 0:
        return 1.0 if excess <= 0 else 0.0
    return min(float(2 * special.ndtr(-excess / spread)), 1.0)

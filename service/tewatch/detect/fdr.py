"""False discovery rate control across a sweep of comparisons (Benjamini-Hochberg q-values)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy import stats


def benjamini_hochberg(p_values: Sequence[float]) -> np.ndarray:
    """q-values: a comparison is a discovery at FDR alpha when its q <= alpha."""
    if len(p_values) == 0:
        return np.empty(0)
    return stats.false_discovery_control(np.clip(np.asarray(p_values, dtype=float), 0.0, 1.0), method="bh")

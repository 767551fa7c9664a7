"""Multi-modal samples: a call that runs at one of two speeds (0.27 ms or 0.55 ms) has no one level."""

from __future__ import annotations

import numpy as np

from tewatch.detect.distributions import mad_sigma

MIN_SAMPLES = 10
MIN_GAP = np.log(1.10)  # modes closer than 10 % are one level
GAPS_TRIED = 3


def sample_modes(samples: np.ndarray, min_share: float = 0.1, separation: float = 4.0) -> list[float]:
    """The modes (medians of each group, ascending) when the samples fall into two groups, else [].

    Two groups: some gap between sorted log samples splits them into parts of at least `min_share` of
    the samples (and 3) each, and is at least 10 % and `separation` times the larger robust spread
    (scaled MAD) of the two parts. Scattered slow outliers are no mode: their own spread is wide."""
    values = np.sort(np.log(np.asarray(samples, dtype=float)))
    n = len(values)
    if n < MIN_SAMPLES:
        return []
    smallest = max(3, int(np.ceil(min_share * n)))
    gaps = np.diff(values)
    candidates = [i for i in np.argsort(gaps)[::-1][:GAPS_TRIED] if smallest <= i + 1 <= n - smallest]
    for i in candidates:
        low, high = values[: i + 1], values[i + 1 :]
        spread = max(mad_sigma(low), mad_sigma(high))
        if gaps[i] >= MIN_GAP and gaps[i] >= separation * spread:
            return [float(np.exp(np.median(low))), float(np.exp(np.median(high)))]
    return []

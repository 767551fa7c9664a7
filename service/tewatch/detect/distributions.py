"""Quantiles and tail areas of the normal, Student's t and F distributions, through scipy.special: the
same functions scipy.stats' distribution objects call, without their per-call argument handling, which
costs more than the sweep's arithmetic; and the normal-scaled median absolute deviation."""

from __future__ import annotations

import math

import numpy as np
from scipy import special

MAD_PER_SIGMA = float(special.ndtri(0.75))  # a normal sample's median absolute deviation, in sigmas


def normal_quantile(p: float) -> float:
    return float(special.ndtri(p))


def t_quantile(p: float, dof: float) -> float:
    """Student's t quantile; the normal one at infinite degrees of freedom."""
    return float(special.stdtrit(dof, p)) if math.isfinite(dof) else normal_quantile(p)


def t_two_sided_p(statistic: float, dof: float) -> float:
    """P(|T| >= |statistic|) for Student's t (the normal distribution at infinite degrees of freedom)."""
    tail = special.stdtr(dof, -abs(statistic)) if math.isfinite(dof) else special.ndtr(-abs(statistic))
    return float(2 * tail)


def f_quantile(p: float, dfn: float, dfd: float) -> float:
    return float(special.fdtri(dfn, dfd, p))


def median_of(x: np.ndarray) -> float:
    """np.median of a 1-D array without NaN by one partition: np.median's checks cost more than the
    partition on the short segments change-point detection takes thousands of medians of."""
    n = len(x)
    middle = np.partition(x, ((n - 1) // 2, n // 2))
    return 0.5 * float(middle[(n - 1) // 2] + middle[n // 2])


def mad_sigma(values: np.ndarray | list[float]) -> float:
    """The median absolute deviation scaled to a normal sigma: scipy.stats.median_abs_deviation(values,
    scale="normal"), NaN for no values or where one is NaN."""
    values = np.asarray(values, dtype=float)
    if values.size == 0 or np.isnan(values).any():
        return math.nan
    return float(np.median(np.abs(values - np.median(values)))) / MAD_PER_SIGMA

"""Quantiles and tail areas of the normal, Student's t and F distributions, through scipy.special: the
same functions scipy.stats' distribution objects call, without their per-call argument handling, which
costs more than the sweep's arithmetic."""

from __future__ import annotations

import math

from scipy import special


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

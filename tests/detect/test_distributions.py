"""The sweep's quantiles, tail areas and rank test agree with scipy.stats."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from tewatch.detect.distributions import (
    f_quantile,
    mad_sigma,
    normal_quantile,
    t_quantile,
    t_two_sided_p,
)
from tewatch.detect.rank_test import mann_whitney_p


@pytest.mark.parametrize("p", [0.5, 0.75, 0.975, 0.995, 1e-6])
def test_normal_quantile(p):
    assert normal_quantile(p) == pytest.approx(stats.norm.ppf(p), rel=1e-12)


@pytest.mark.parametrize("dof", [1.0, 2.5, 7.0, 60.0, math.inf])
@pytest.mark.parametrize("p", [0.6, 0.975, 0.995])
def test_t_quantile(p, dof):
    assert t_quantile(p, dof) == pytest.approx(stats.t.ppf(p, dof), rel=1e-12)


@pytest.mark.parametrize("dof", [1.0, 3.0, 29.0, math.inf])
@pytest.mark.parametrize("statistic", [0.0, 0.4, -2.1, 5.0])
def test_t_two_sided_p(statistic, dof):
    assert t_two_sided_p(statistic, dof) == pytest.approx(2 * stats.t.sf(abs(statistic), dof), rel=1e-12)


@pytest.mark.parametrize(("dfn", "dfd"), [(1.0, 1.0), (4.0, 30.0), (19.0, 7.5)])
@pytest.mark.parametrize("p", [0.5, 0.95, 0.99])
def test_f_quantile(p, dfn, dfd):
    assert f_quantile(p, dfn, dfd) == pytest.approx(stats.f.ppf(p, dfn, dfd), rel=1e-12)


def _rank_test_inputs() -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(5)
    pairs = []
    sizes = [(1, 1), (1, 9), (2, 100), (3, 5), (4, 4), (8, 8), (8, 30), (9, 9), (12, 40), (30, 30), (60, 7)]
    for n1, n2 in sizes:
        for shift in (0.0, 0.3, 3.0):
            x = rng.normal(1.0 + shift, 0.1, n1)
            y = rng.normal(1.0, 0.1, n2)
            pairs += [(x, y), (np.round(x, 1), np.round(y, 1))]  # the second with ties
    same = np.full(10, 2.5)
    pairs += [(same, same), (same[:3], same[:4]), (np.array([1.0, np.nan, 2.0]), np.array([1.5, 3.0]))]
    return pairs


@pytest.mark.parametrize(("x", "y"), _rank_test_inputs())
def test_mann_whitney_p_is_scipys(x, y):
    expected = stats.mannwhitneyu(x, y, alternative="two-sided").pvalue
    assert mann_whitney_p(x, y) == pytest.approx(expected, rel=1e-12, abs=1e-300, nan_ok=True)


@pytest.mark.parametrize(
    "values",
    [
        [1.0],
        [1.0, 2.0],
        [0.1, 0.5, 0.2, 9.0, 0.3],
        list(np.random.default_rng(2).lognormal(0, 0.2, 31)),
        [],
        [1.0, np.nan],
    ],
)
@pytest.mark.filterwarnings("ignore:One or more sample arguments is too small")  # scipy on no values
def test_mad_sigma_is_scipys(values):
    expected = stats.median_abs_deviation(np.asarray(values, dtype=float), scale="normal")
    assert mad_sigma(values) == pytest.approx(expected, rel=1e-12, nan_ok=True)

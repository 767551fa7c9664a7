"""The sweep's quantiles and tail areas agree with scipy.stats' distribution objects."""

from __future__ import annotations

import math

import pytest
from scipy import stats

from tewatch.detect.distributions import f_quantile, normal_quantile, t_quantile, t_two_sided_p


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

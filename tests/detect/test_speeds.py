import numpy as np
import pytest

from tewatch.detect.changepoint import critical_z, detect_change_points, two_speeds
from tewatch.detect.config import ChangePointConfig
from tewatch.detect.noise import H200_PROFILES
from tewatch.detect.speeds import share_split_curve, share_z


def two_speed_logs(rng, slow_share, n):
    return rng.normal(0.0, 0.026, n) + np.where(rng.random(n) < slow_share, np.log(1.3), 0.0)


def test_two_speeds_are_told_from_one_noisy_level():
    rng = np.random.default_rng(21)
    config = ChangePointConfig()
    for share in (0.2, 0.35, 0.8):
        assert two_speeds(two_speed_logs(rng, share, 150), config) is not None
    one_level = [
        rng.normal(0.0, 0.05, 150),
        0.05 * rng.standard_t(3, 150),
        *(np.log(H200_PROFILES[name].commit_values(rng, (150,))) for name in ("matmul", "linear")),
    ]
    assert all(two_speeds(x, config) is None for x in one_level)
    threshold = two_speeds(two_speed_logs(rng, 0.5, 150), config)
    assert 0.03 < threshold < np.log(1.3) - 0.03


@pytest.mark.parametrize("share", [0.1, 0.35, 0.5])
def test_the_largest_share_statistic_of_exchangeable_labels_holds_the_rank_tests_critical_value(share):
    rng = np.random.default_rng(22)
    for n, rate in ((40, 0.05), (150, 0.02)):
        critical = critical_z(n, rate, 5)
        labels = rng.random((3000, n)) < share
        largest = np.array([share_split_curve(row.astype(float))[4 : n - 5].max() for row in labels])
        assert (largest > critical).mean() <= 1.3 * rate


def test_the_share_test_of_one_split_is_its_curve_at_that_split_with_a_sign():
    rng = np.random.default_rng(23)
    slow = rng.random(60) < np.where(np.arange(60) < 25, 0.3, 0.8)
    curve = share_split_curve(slow.astype(float))
    assert share_z(slow[:25], slow[25:]) == pytest.approx(curve[24])
    assert share_z(slow[25:], slow[:25]) == pytest.approx(-curve[24])


def test_a_change_in_the_share_of_slow_runs_is_found_and_a_steady_share_is_not():
    found = 0
    for seed in range(30):
        rng = np.random.default_rng(300 + seed)
        y = np.exp(np.concatenate([two_speed_logs(rng, 0.35, 100), two_speed_logs(rng, 0.8, 100)]))
        found += any(
            cp.first_possible_index <= 100 <= cp.last_possible_index and cp.effect > 0
            for cp in detect_change_points(y)
        )
    assert found >= 27
    rng = np.random.default_rng(24)
    steady = sum(
        bool(detect_change_points(np.exp(two_speed_logs(rng, share, 200))))
        for share in (0.35, 0.8)
        for _ in range(100)
    )
    assert steady <= 4  # 1 % per segment: about 2 expected

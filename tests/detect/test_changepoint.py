import numpy as np
import pytest
from tewatch.detect.changepoint import detect_change_points
from tewatch.detect.config import ChangePointConfig
from tewatch.detect.direction import Direction, direction_of, higher_is_better
from tewatch.detect.environment import environment_shift


def noisy(n: int, cv: float, seed: int) -> np.ndarray:
    return 1e-3 * np.exp(np.random.default_rng(seed).normal(0.0, cv, n))


@pytest.mark.parametrize("step", [0.05, -0.05, 0.10])
def test_finds_a_step_in_either_direction_with_its_baseline_and_limits(step):
    y = noisy(200, 0.02, seed=1)
    y[120:] *= 1 + step
    [cp] = detect_change_points(y)
    assert cp.first_possible_index <= 120 <= cp.last_possible_index
    assert abs(cp.index - 120) <= 3
    assert cp.effect == pytest.approx(step, abs=0.015)
    assert cp.lower_limit < cp.baseline < cp.upper_limit
    outside = cp.level_after > cp.upper_limit if step > 0 else cp.level_after < cp.lower_limit
    assert outside
    assert cp.baseline == pytest.approx(1e-3, rel=0.01)


def test_pure_noise_gives_nothing():
    found = [cp for seed in range(50) for cp in detect_change_points(noisy(300, 0.03, seed))]
    assert found == []


def test_steps_below_the_minimum_effect_are_not_reported():
    y = noisy(400, 0.002, seed=3)
    y[200:] *= 1.01  # real, and very significant, but under the 2 % minimum effect
    assert detect_change_points(y) == []
    assert len(detect_change_points(y, ChangePointConfig(min_effect=0.005))) == 1


def test_spikes_and_short_bursts_are_not_change_points():
    y = noisy(200, 0.02, seed=4)
    y[50] *= 1.5
    y[100:103] *= 1.3  # three throttled runs in a row
    assert detect_change_points(y) == []


def test_a_jump_on_the_newest_points_waits_for_persistence():
    y = noisy(120, 0.01, seed=5)
    y[-2:] *= 1.2
    assert detect_change_points(y) == []
    longer = np.concatenate([y[:-2], noisy(6, 0.01, seed=6) * 1.2])
    [cp] = detect_change_points(longer)
    assert cp.first_possible_index <= 118 <= cp.last_possible_index and abs(cp.index - 118) <= 2


def test_gaps_are_absent_and_indices_refer_to_the_input():
    y = noisy(200, 0.02, seed=7)
    y[100:] *= 1.08
    y[[10, 99, 100, 150]] = np.nan
    y[20] = 0.0  # no value, not a value of zero
    [cp] = detect_change_points(y)
    assert cp.index == 101 and cp.before_index == 98


def test_direction_follows_the_unit():
    assert higher_is_better("TFLOP/s") and higher_is_better("fraction") and not higher_is_better("seconds")
    assert direction_of(0.05, higher_is_better=False) is Direction.regression
    assert direction_of(0.05, higher_is_better=True) is Direction.improvement
    assert direction_of(-0.05, higher_is_better=True) is Direction.regression


def test_a_change_point_at_a_driver_upgrade_is_an_environment_shift():
    old = {"driver": "580.1", "cuda": "13.0", "torch": "2.11", "te_version": "2.20"}
    envs = [old] * 10 + [{**old, "driver": "590.2"}] * 10
    assert environment_shift(envs, 8, 12) == (10, {"driver": ["580.1", "590.2"]})
    assert environment_shift(envs, 12, 15) is None
    same_code_new_commit = [{**old}] * 20
    assert environment_shift(same_code_new_commit, 5, 15) is None

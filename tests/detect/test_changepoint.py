import numpy as np
import pytest

from tewatch.detect.changepoint import (
    critical_z,
    detect_change_points,
    hodges_lehmann,
    rank_split_curve,
    shift_reaches,
)
from tewatch.detect.config import ChangePointConfig
from tewatch.detect.direction import Direction, direction_of, higher_is_better
from tewatch.detect.environment import environment_shift
from tewatch.detect.noise import H200_PROFILES
from tewatch.detect.version import DETECTOR_VERSION


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


def test_critical_z_holds_the_false_alarm_rate_of_the_largest_rank_statistic():
    rng = np.random.default_rng(11)
    for n, rate in ((40, 0.05), (150, 0.05), (150, 0.01)):
        critical = critical_z(n, rate, 5)
        largest = np.array([rank_split_curve(rng.random(n))[4 : n - 5].max() for _ in range(6000)])
        assert 0.6 * rate <= (largest > critical).mean() <= 1.4 * rate
    assert critical_z(300, 0.01, 5) > critical_z(60, 0.01, 5) > critical_z(60, 0.05, 5)


@pytest.mark.parametrize("profile", ["matmul", "quantize", "linear"])
def test_false_alarms_on_pure_noise_stay_near_the_configured_rate(profile):
    rng = np.random.default_rng(12)
    noise = H200_PROFILES[profile]
    series_with_alarm = sum(bool(detect_change_points(noise.commit_values(rng, (200,)))) for _ in range(300))
    assert series_with_alarm <= 0.025 * 300  # 1 % per segment: about 3 expected


def test_a_small_step_in_heavy_noise_is_found_from_the_whole_history():
    # 3 % in te.Linear-like noise (6 % per commit, 5 % outlying processes): too small for a 60-point
    # window, found by the strongest split of the whole history in most series
    noise = H200_PROFILES["linear"]
    found = 0
    for seed in range(40):
        y = noise.commit_values(np.random.default_rng(seed), (300,))
        y[150:] *= 1.03
        found += any(
            cp.first_possible_index <= 150 <= cp.last_possible_index for cp in detect_change_points(y)
        )
    assert found >= 20


def test_outlying_processes_are_set_aside_so_a_small_step_under_them_is_found():
    # quantize-like: a 3 % core, and 15 % of processes 15-28 % slower; the step is the core's own size
    noise = H200_PROFILES["quantize"]
    found = 0
    for seed in range(30):
        rng = np.random.default_rng(100 + seed)
        at = int(rng.integers(60, 240))
        y = noise.commit_values(rng, (300,))
        y[at:] *= 0.97
        found += any(
            cp.first_possible_index <= at <= cp.last_possible_index and cp.effect < 0
            for cp in detect_change_points(y)
        )
    assert found >= 28


def test_reported_ranges_hold_the_change_about_99_percent_of_the_time():
    noise = H200_PROFILES["linear"]
    held = total = 0
    for seed in range(150):
        rng = np.random.default_rng(1000 + seed)
        at = int(rng.integers(60, 240))
        y = noise.commit_values(rng, (300,))
        y[at:] *= 1.05
        for cp in detect_change_points(y):
            if abs(cp.index - at) <= 40:
                total += 1
                held += cp.first_possible_index <= at <= cp.last_possible_index
    assert total >= 135 and held / total >= 0.95


def test_the_effect_is_the_hodges_lehmann_shift_and_the_check_counts_it_exactly():
    rng = np.random.default_rng(14)
    y = 1e-3 * np.exp(rng.normal(0.0, 0.02, 160))
    y[80:] *= 1.06
    [cp] = detect_change_points(y)
    x = np.log(y)
    assert cp.effect == pytest.approx(
        np.expm1(hodges_lehmann(x[:80], x[80:])), abs=1e-3
    )  # 3-sigma points aside
    assert cp.level_after == pytest.approx(cp.baseline * (1 + cp.effect))
    for _ in range(200):
        before, after = rng.normal(0, 1, rng.integers(5, 30)), rng.normal(0.3, 1, rng.integers(5, 30))
        shift = float(rng.normal(0.3, 0.5))
        estimate = hodges_lehmann(before, after)
        if abs(estimate - shift) > 1e-9:
            assert shift_reaches(before, after, shift) == (
                estimate >= shift if shift >= 0 else estimate <= shift
            )


def test_the_detector_version_fits_the_store():
    assert len(DETECTOR_VERSION) <= 120  # String(120) columns of detections and pr comparisons


@pytest.mark.parametrize("profile", ["matmul", "quantize"])
def test_a_huge_jump_onto_a_noisier_level_on_the_newest_points_keeps_its_points_and_its_place(profile):
    # 77 times slower on the newest 18 commits, spreading 17 % there: its points are its level, not
    # outliers of the old one, and an outlying old process just before it is no part of it
    noise = H200_PROFILES[profile]
    for seed in range(20):
        rng = np.random.default_rng(400 + seed)
        y = noise.commit_values(rng, (300,))
        y[282:] *= 77 * np.exp(rng.normal(0.0, 0.17, 18))
        [cp] = detect_change_points(y)
        assert cp.first_possible_index <= 282 <= cp.last_possible_index and abs(cp.index - 282) <= 1
        assert cp.n_after >= 16 and cp.effect > 50

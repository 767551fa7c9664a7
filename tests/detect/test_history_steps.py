"""Along a history: short levels are levels, ranges hold the step, undone regressions and shifts shared by an
environment are recognised (detect.changepoint, detect.returns, detect.shared_shifts, detect.known_steps)."""

from __future__ import annotations

import numpy as np
import pytest

from tewatch.detect.changepoint import ChangePoint, detect_change_points
from tewatch.detect.known_steps import ENVIRONMENT_SERIES, known_histories
from tewatch.detect.noise import H200_PROFILES
from tewatch.detect.returns import returns
from tewatch.detect.shared_shifts import ShiftMember, shared_shifts


def noisy(levels: np.ndarray, profile: str, seed: int) -> np.ndarray:
    return levels * H200_PROFILES[profile].commit_values(np.random.default_rng(seed), (len(levels),))


@pytest.mark.parametrize("profile", ["matmul", "quantize", "linear"])
def test_fourteen_commits_five_times_faster_are_a_level_with_both_edges(profile):
    levels = np.ones(300)
    levels[150:164] = 0.2
    levels[164:] = 0.9
    for seed in range(5):
        found = detect_change_points(noisy(levels, profile, seed))
        edges = [(cp.index, round(cp.effect, 1)) for cp in found if abs(cp.effect) > 0.5]
        assert [index for index, _ in edges] == [150, 164] or [i for i, _ in edges] == [150, 165]
        assert edges[0][1] == pytest.approx(-0.8, abs=0.05) and edges[1][1] == pytest.approx(3.5, abs=0.3)


@pytest.mark.parametrize("profile", ["matmul", "quantize"])
def test_a_95x_slowdown_later_halved_is_blamed_on_its_own_commit(profile):
    levels = np.ones(300)
    levels[120:141] = 95.0
    levels[141:] = 47.5
    for seed in range(5):
        first, second = detect_change_points(noisy(levels, profile, 10 + seed))
        assert abs(first.index - 120) <= 1 and first.effect == pytest.approx(94, rel=0.1)
        assert abs(second.index - 141) <= 1 and second.effect == pytest.approx(-0.5, abs=0.05)


def test_ranges_of_known_steps_hold_them():
    covered = matched = 0
    for history in known_histories(8, 300, seed=3):
        found = detect_change_points(history.values)
        for step in history.steps:
            near = [cp for cp in found if abs(cp.index - step.at) <= 10]
            if near:
                cp = min(near, key=lambda cp: abs(cp.index - step.at))
                matched += 1
                covered += cp.first_possible_index <= step.at <= cp.last_possible_index
                assert cp.first_possible_index <= cp.index <= cp.last_possible_index
    assert matched > 600 and covered >= 0.95 * matched


def change_point(index: int, baseline: float, after: float) -> ChangePoint:
    return ChangePoint(
        index,
        index - 1,
        index,
        index,
        baseline,
        after,
        baseline * 0.98,
        baseline * 1.02,
        after / baseline - 1,
        5.0,
        0.01,
        50,
        50,
    )


def test_a_regression_is_undone_once_the_level_is_back_within_its_limits():
    up, back = change_point(100, 1.0, 1.3), change_point(150, 1.3, 1.01)
    assert returns([up, back], higher_is_better=False) == {0: 1}
    halved = change_point(150, 1.3, 1.15)
    assert returns([up, halved], higher_is_better=False) == {}
    assert returns([up, halved, change_point(200, 1.15, 0.9)], higher_is_better=False) == {0: 2}
    # for a throughput, a fall is the regression and a rise brings it back
    fall, rise = change_point(100, 10.0, 7.0), change_point(150, 7.0, 10.1)
    assert returns([fall, rise], higher_is_better=True) == {0: 1}


def test_a_commit_most_series_of_an_environment_share_is_one_shift():
    members = [ShiftMember(f"s{i}", 40, frozenset({39, 40, 41})) for i in range(8)]
    members.append(ShiftMember("s9", 70, frozenset({70})))
    measured = dict.fromkeys(range(100), 10)
    [shift] = shared_shifts(members, measured)
    assert shift.commit == 40 and shift.members == tuple(range(8)) and shift.measured == 10
    assert shared_shifts(members[:3], measured) == []  # three of ten: each series its own
    assert shared_shifts(members[:4], {40: 4, 39: 4, 41: 4}) == []  # most, but fewer than five


def test_environment_shifts_of_the_known_histories_are_shared_by_most_of_their_series():
    histories = [h for h in known_histories(2, 300, seed=4) if h.scenario.startswith("environment")]
    assert len(histories) == 2 * ENVIRONMENT_SERIES
    members = []
    for i, history in enumerate(histories[:ENVIRONMENT_SERIES]):
        for cp in detect_change_points(history.values):
            if cp.effect > 0:
                commits = frozenset(range(cp.first_possible_index, cp.last_possible_index + 1))
                members.append(ShiftMember(i, cp.index, commits))
    [shift] = shared_shifts(members, dict.fromkeys(range(300), ENVIRONMENT_SERIES))
    [step] = {h.steps[0].at for h in histories[:ENVIRONMENT_SERIES] if h.steps}
    assert abs(int(shift.commit) - step) <= 1 and len(shift.members) >= ENVIRONMENT_SERIES // 2

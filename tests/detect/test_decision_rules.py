"""The rules pipeline/ applies to what it reads, without a database: correctness flips and their replay
in commit order, what change points do to stored ones and their alerts, an environment's shared shift
coming back or going, and which runs a TE release's steps compare."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

import pytest

from tewatch.detect.change_point_alerts import (
    AlertStep,
    alert_step,
    is_same_change,
    is_withdrawn,
    opens_alert,
)
from tewatch.detect.changepoint import ChangePoint
from tewatch.detect.direction import Direction
from tewatch.detect.flips import (
    Replayed,
    is_fix,
    is_new_failure,
    passes_again,
    replay_flips,
    verdicts_before,
)
from tewatch.detect.release_steps import BASE_RUNS, Step, every_step, has_step, steps_of_run
from tewatch.detect.shared_shifts import majority_return, shift_gone


@pytest.mark.parametrize(
    ("status", "previous", "new"),
    [
        ("error", "pass", True),
        ("fail_accuracy", None, True),
        ("timeout", "error", False),  # already failing: a known failure
        ("oom", "unsupported", False),  # was not measured as passing
        ("unsupported", "pass", False),  # a capability gate is no failure
        ("pass", "error", False),
    ],
)
def test_a_new_failure_fails_now_and_passed_or_did_not_exist(status, previous, new) -> None:
    assert is_new_failure(status, previous) is new


def test_passing_again_is_a_branch_matter_and_a_fix_a_pull_requests() -> None:
    assert passes_again("pass", on_branch=True) and not passes_again("pass", on_branch=False)
    assert not passes_again("error", on_branch=True)
    assert is_fix("pass", "error") and is_fix("pass", "oom")
    assert not is_fix("pass", "pass") and not is_fix("pass", None) and not is_fix("error", "error")
    assert not is_fix("pass", "unsupported")


def test_the_verdict_before_skips_runs_of_later_commits_but_keeps_undated_ones() -> None:
    day = [datetime(2026, 1, d, tzinfo=UTC) for d in range(1, 5)]
    earlier = [(1, "pass", day[0]), (1, "error", day[3]), (2, "error", None), (2, "pass", day[1])]
    assert verdicts_before(earlier, day[2]) == {1: "pass", 2: "pass"}
    assert verdicts_before(earlier, None) == {1: "error", 2: "pass"}


def test_the_replay_finds_the_runs_that_open_or_resolve_and_follows_the_open_alerts() -> None:
    runs = [
        ("r1", [(1, "pass"), (2, "pass")]),
        ("r2", [(1, "error"), (2, "pass")]),  # case 1 fails: opens
        ("r3", [(1, "error"), (2, "pass")]),  # nothing changes
        ("r4", [(1, "pass"), (2, "pass")]),  # case 1 passes again: resolves the alert r2 opened
        ("r5", [(1, "pass"), (2, "pass")]),  # nothing left open
    ]
    found = replay_flips(runs, {"r2", "r3", "r4", "r5"}, alerted=set())
    assert found == [Replayed("r2", {1: "pass", 2: "pass"}), Replayed("r4", {1: "error", 2: "pass"})]
    # a run outside the batch still sets what the next one is judged against
    assert replay_flips(runs, {"r3"}, alerted=set()) == []
    assert replay_flips(runs, {"r1"}, alerted={2}) == [Replayed("r1", {})]


def change_point(first: int, last: int) -> ChangePoint:
    return ChangePoint(last, first - 1, first, last, 1.0, 1.2, 0.9, 1.1, 0.2, 5.0, 0.01, 10, 10)


def test_a_stored_change_point_is_the_same_one_moved_within_its_range_and_persistence() -> None:
    cp = change_point(10, 12)
    assert is_same_change("regression", 12, Direction.regression, cp, slack=0)
    assert is_same_change("regression", 8, Direction.regression, cp, slack=2)
    assert not is_same_change("regression", 8, Direction.regression, cp, slack=1)
    assert not is_same_change("improvement", 11, Direction.regression, cp, slack=2)
    assert not is_same_change("regression", None, Direction.regression, cp, slack=2)
    assert is_withdrawn(7, {5, 6, 7}) and not is_withdrawn(3, {5, 6, 7})


def test_only_a_regression_outside_an_environment_shift_opens_an_alert() -> None:
    assert opens_alert(Direction.regression, in_environment_shift=False)
    assert not opens_alert(Direction.regression, in_environment_shift=True)
    assert not opens_alert(Direction.improvement, in_environment_shift=False)


@pytest.mark.parametrize(
    ("in_shift", "still_open", "returned", "step"),
    [
        (True, True, True, AlertStep.part_of_shift),
        (True, False, True, AlertStep.returned),  # already resolved: the shift changes nothing
        (False, True, True, AlertStep.returned),
        (False, True, False, AlertStep.follow),
        (True, False, False, AlertStep.follow),
    ],
)
def test_an_alert_of_a_change_point_is_folded_resolved_as_returned_or_followed(
    in_shift, still_open, returned, step
) -> None:
    assert alert_step(in_shift, still_open, returned) is step


def test_a_shift_returns_where_most_of_its_series_did_and_goes_when_a_full_pass_misses_it() -> None:
    assert majority_return(["c9", "c9", "c8"], members=6) == "c9"
    assert majority_return(["c9", "c8"], members=5) is None
    assert shift_gone(found_again=False, seen=40, measured=40)
    assert not shift_gone(found_again=False, seen=10, measured=40)  # a pass over some series cannot tell
    assert not shift_gone(found_again=True, seen=40, measured=40)


@dataclass(frozen=True)
class Release:
    version: str
    run_ids: list[int]


def test_a_release_run_is_judged_against_the_release_before_and_reopens_the_next_releases() -> None:
    releases = [Release("2.18.0", list(range(1, 8))), Release("2.19.0", [10]), Release("2.20.2", [20, 21])]
    newest = tuple(range(8 - BASE_RUNS, 8))
    assert steps_of_run(releases, "2.19.0", 10) == [
        Step("2.18.0", "2.19.0", newest, 10),
        Step("2.19.0", "2.20.2", (10,), 20),
        Step("2.19.0", "2.20.2", (10,), 21),
    ]
    assert steps_of_run(releases, "2.18.0", 3) == [Step("2.18.0", "2.19.0", newest, 10)]
    assert steps_of_run(releases[:1], "2.18.0", 3) == []
    assert every_step(releases) == [
        Step("2.18.0", "2.19.0", newest, 10),
        Step("2.19.0", "2.20.2", (10,), 20),
        Step("2.19.0", "2.20.2", (10,), 21),
    ]
    assert has_step(3, 1) and not has_step(0, 4) and not has_step(2, 0)

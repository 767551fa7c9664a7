"""The halving on its own: no git, no database, no measurement."""

from __future__ import annotations

import itertools
import math

import pytest

from tewatch.bisect.search import Verdict, bounds, finding, most_steps, next_commit

COMMITS = [f"c{i:02d}" for i in range(17)]  # c00 good ... c16 bad


def bisect(commits: list[str], first_bad: int, skipped: set[int] = frozenset()) -> tuple[list[str], object]:
    """Run the halving against a known answer; the commits it measured, and its finding."""
    verdicts: dict[str, Verdict] = {}
    measured = []
    while (commit := next_commit(commits, verdicts)) is not None:
        index = commits.index(commit)
        measured.append(commit)
        if index in skipped:
            verdicts[commit] = Verdict.skip
        else:
            verdicts[commit] = Verdict.bad if index >= first_bad else Verdict.good
        assert len(measured) <= len(commits), "the halving measured a commit twice"
    return measured, finding(commits, verdicts)


@pytest.mark.parametrize("first_bad", range(1, 17))
def test_every_first_bad_commit_is_found_within_log2_steps(first_bad: int) -> None:
    measured, found = bisect(COMMITS, first_bad)
    assert found.culprit == COMMITS[first_bad]
    assert found.last_good == COMMITS[first_bad - 1]
    assert len(measured) == len(set(measured)) <= most_steps(15) == math.ceil(math.log2(16))


def test_a_skip_beside_the_answer_leaves_the_smallest_range() -> None:
    _, found = bisect(COMMITS, first_bad=9, skipped={8})
    assert found.culprit is None
    assert found.candidates == ("c08", "c09")
    assert (found.last_good, found.first_bad) == ("c07", "c09")


def test_a_skip_elsewhere_still_names_the_commit() -> None:
    measured, found = bisect(COMMITS, first_bad=11, skipped={8, 12})
    assert found.culprit == "c11"
    assert "c08" in measured or "c12" in measured  # the skip was met and stepped round


def test_every_skip_pattern_of_a_short_range_contains_the_answer() -> None:
    commits = COMMITS[:7]
    for first_bad in range(1, 7):
        for size in range(0, 4):
            for skipped in itertools.combinations(range(1, 6), size):
                _, found = bisect(commits, first_bad, set(skipped))
                assert commits[first_bad] in found.candidates
                assert found.first_bad == commits[first_bad] or commits.index(found.first_bad) > first_bad
                assert all(commits.index(c) in skipped for c in found.candidates[:-1])


def test_adjacent_endpoints_need_no_measurement() -> None:
    assert next_commit(["a", "b"], {}) is None
    assert finding(["a", "b"], {}).culprit == "b"


def test_a_good_verdict_after_a_bad_one_is_left_aside() -> None:
    verdicts = {"c04": Verdict.bad, "c10": Verdict.good}
    assert bounds(COMMITS, verdicts).high == 4
    assert bounds(COMMITS, verdicts).low == 0


def test_the_middle_is_measured_first_and_an_unfinished_bisection_has_no_finding() -> None:
    assert next_commit(COMMITS, {}) == "c08"
    assert finding(COMMITS, {}) is None
    with pytest.raises(ValueError):
        bounds(["only"], {})


def test_a_backfill_takes_every_strided_commit_and_the_last() -> None:
    from tewatch.bisect.backfill import chosen

    assert chosen(COMMITS, 6) == ["c00", "c06", "c12", "c16"]
    assert chosen(COMMITS, 8) == ["c00", "c08", "c16"]
    assert chosen(["a"], 3) == ["a"]
    with pytest.raises(ValueError):
        chosen(COMMITS, 0)

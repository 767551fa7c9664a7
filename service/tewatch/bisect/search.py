"""The halving, as `git bisect` does it, pure: commits in order (good endpoint first, bad endpoint last)
and the verdicts known so far in; the next commit to measure, or the finding, out."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum


class Verdict(StrEnum):
    good = "good"
    bad = "bad"
    skip = "skip"  # no environment, or no verdict: as `git bisect skip`


@dataclass(frozen=True)
class Finding:
    """The first bad commit when `culprit` is set; else the smallest range the skips allow: the first bad
    commit is one of `candidates` (the skipped commits after `last_good`, then `first_bad`)."""

    last_good: str
    first_bad: str
    candidates: tuple[str, ...]

    @property
    def culprit(self) -> str | None:
        return self.first_bad if len(self.candidates) == 1 else None


@dataclass(frozen=True)
class Bounds:
    low: int  # index of the last good commit before the first bad one
    high: int  # index of the first bad commit after it


def bounds(commits: Sequence[str], verdicts: Mapping[str, Verdict]) -> Bounds:
    """Where the first bad commit can lie. The endpoints count as good and bad whatever `verdicts` says; a
    good verdict after a bad one is left aside, as git does (the first bad commit after the last good one
    before it is the answer)."""
    if len(commits) < 2:
        raise ValueError("a bisection needs a good and a bad commit")
    high = len(commits) - 1
    for index in range(1, len(commits) - 1):
        if verdicts.get(commits[index]) is Verdict.bad:
            high = index
            break
    low = 0
    for index in range(1, high):
        if verdicts.get(commits[index]) is Verdict.good:
            low = index
    return Bounds(low, high)


def next_commit(commits: Sequence[str], verdicts: Mapping[str, Verdict]) -> str | None:
    """The unmeasured commit nearest the middle of the open range, or None when the range is as small as
    the skips allow."""
    found = bounds(commits, verdicts)
    middle = (found.low + found.high) / 2
    open_ = [i for i in range(found.low + 1, found.high) if commits[i] not in verdicts]
    if not open_:
        return None
    return commits[min(open_, key=lambda i: (abs(i - middle), i))]


def finding(commits: Sequence[str], verdicts: Mapping[str, Verdict]) -> Finding | None:
    """The answer once `next_commit` has nothing left to measure."""
    if next_commit(commits, verdicts) is not None:
        return None
    found = bounds(commits, verdicts)
    return Finding(
        last_good=commits[found.low],
        first_bad=commits[found.high],
        candidates=tuple(commits[found.low + 1 : found.high + 1]),
    )


def most_steps(count: int) -> int:
    """Commits a bisection of `count` commits between the endpoints measures at most, without skips."""
    steps, open_ = 0, count
    while open_ > 0:
        open_ //= 2
        steps += 1
    return steps

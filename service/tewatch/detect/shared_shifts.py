"""Shifts shared by most series of one environment (a machine and its software): one change of the
machine, not hundreds of changes of benchmarks.

Each member is one series' change point in a direction, with the commits its range may hold the change
at. A commit is a shared shift when the ranges of at least `min_share` of the series measured at that
commit, and at least `min_series` of them, hold it. The commit held by the most ranges (of those, the one
most change points name) is taken first and its members are set aside, then the next, until no commit is
shared. Ties go to the commit met first in the members' order.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

MIN_SHARE = 0.5
MIN_SERIES = 5
C = TypeVar("C", bound=Hashable)  # what names a commit


@dataclass(frozen=True)
class ShiftMember(Generic[C]):
    series: Hashable
    at: C  # the commit the change point names
    commits: frozenset[C]  # the commits its range holds


@dataclass(frozen=True)
class SharedShift(Generic[C]):
    commit: C
    members: tuple[int, ...]  # positions in the members given
    measured: int  # series measured at that commit


def shared_shifts(
    members: Sequence[ShiftMember[C]],
    measured: Mapping[C, int],
    min_share: float = MIN_SHARE,
    min_series: int = MIN_SERIES,
) -> list[SharedShift[C]]:
    """The shared shifts among `members` (change points of one direction in one environment);
    `measured`: how many series of the environment were measured at each commit."""
    left = set(range(len(members)))
    found: list[SharedShift[C]] = []
    while left:
        holding: Counter[C] = Counter()
        for i in sorted(left):
            holding.update(members[i].commits)
        named = Counter(members[i].at for i in left)
        shared = [
            commit
            for commit, count in holding.items()
            if count >= min_series and count >= min_share * measured.get(commit, count)
        ]
        if not shared:
            break
        commit = max(shared, key=lambda c: (holding[c], named[c]))
        taken = {i for i in left if commit in members[i].commits}
        distinct = {members[i].series for i in taken}
        if len(distinct) < min_series:
            break
        found.append(SharedShift(commit, tuple(sorted(taken)), measured.get(commit, len(distinct))))
        left -= taken
    return found


def majority_return(back: Sequence[C], members: int) -> C | None:
    """The commit where most of a shift's `members` series came back to their earlier level (`back`: the
    commit of each one that did), the most named; None while fewer than half of them have."""
    if 2 * len(back) < members:
        return None
    return Counter(back).most_common(1)[0][0]


def shift_gone(found_again: bool, seen: int, measured: int) -> bool:
    """A stored shift that this pass did not find again is gone when the pass saw at least as many of the
    environment's series (`seen`) as the shift counted measured: a pass over fewer of them cannot tell."""
    return not found_again and seen >= measured

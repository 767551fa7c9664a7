"""Correctness flips, decided on statuses alone: a new failure (a case fails now and passed, or did not
exist, before), a case passing again on a branch (its open correctness alert resolves), a fix in a pull
request (failing on the merge base, passing in the head), and the replay of a branch's runs in commit
order that finds which runs open or resolve a correctness alert. Statuses are the words of
tewatch.core.statuses; the store's VerdictStatus, a str enum, compares equal to them."""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Generic, TypeVar

from tewatch.core.statuses import FAILING_STATUSES

PASS = "pass"
S = TypeVar("S", bound=str)  # a status: a str, or the store's str enum
K = TypeVar("K", bound=Hashable)  # what names a case


def is_new_failure(status: str, previous: str | None) -> bool:
    """A correctness regression: the case fails now and passed (or did not exist) before."""
    return status in FAILING_STATUSES and previous in (None, PASS)


def passes_again(status: str, on_branch: bool) -> bool:
    """A branch run's passing case resolves that case's open correctness alert on the branch (a pull
    request's run resolves nothing: its passing cases are fixes, reported, until it is merged)."""
    return on_branch and status == PASS


def is_fix(status: str, previous: str | None) -> bool:
    """A case a pull request fixes: failing on the merge base, passing in the head."""
    return previous in FAILING_STATUSES and status == PASS


def verdicts_before(
    earlier: Iterable[tuple[K, S, datetime | None]], committed_at: datetime | None
) -> dict[K, S]:
    """Each case's latest status among `earlier` (case, status, its run's commit time, in history
    order), skipping runs of a commit dated after `committed_at` (either date unknown: kept)."""
    latest: dict[K, S] = {}
    for case, status, at in earlier:
        if committed_at is not None and at is not None and at > committed_at:
            continue
        latest[case] = status
    return latest


@dataclass(frozen=True)
class Replayed(Generic[K, S]):
    run: Hashable
    before: dict[K, S]  # the status each of the run's cases had at the run before


def replay_flips(
    runs: Sequence[tuple[Hashable, Sequence[tuple[K, S]]]],
    batch: set,
    alerted: set[K],
) -> list[Replayed[K, S]]:
    """A branch's runs in commit order (run, its cases' statuses): those of `batch` that open a correctness
    alert (a new failure) or resolve one (a case of `alerted`, the cases with an open alert, passing
    again), each with what its cases had before; `alerted` is followed as the replay opens and resolves."""
    latest: dict[K, S] = {}
    alerted = set(alerted)
    found = []
    for run, verdicts in runs:
        if run in batch:
            before = {case: latest[case] for case, _ in verdicts if case in latest}
            failing = {c for c, s in verdicts if is_new_failure(s, before.get(c))}
            fixed = {c for c, s in verdicts if passes_again(s, True) and c in alerted}
            if failing or fixed:
                found.append(Replayed(run, before))
                alerted = (alerted | failing) - fixed
        latest.update(verdicts)
    return found

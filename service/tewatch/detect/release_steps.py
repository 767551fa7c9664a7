"""Which release steps a run of a TE release takes part in: each release is judged against the release
before it (on one branch and machine), its runs against the newest BASE_RUNS runs of that release, as a
pull request against its merge base. A run of a release is compared with the release before; and, when
its release is the base of a later one (runs come out of commit order, or a release is run again), the
later release's runs are compared again."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Protocol

BASE_RUNS = 5  # the newest runs of the release before are its side, as rounds


class Release(Protocol):
    @property
    def version(self) -> str: ...
    @property
    def run_ids(self) -> Sequence[int]: ...  # in commit order


@dataclass(frozen=True)
class Step:
    """One run of a release, to be judged against the newest runs of the release before."""

    base_version: str
    head_version: str
    base_run_ids: tuple[int, ...]
    head_run_id: int


def _step(base: Release, head_version: str, head_run_id: int) -> Step:
    return Step(base.version, head_version, tuple(base.run_ids[-BASE_RUNS:]), head_run_id)


def steps_of_run(releases: Sequence[Release], version: str, run_id: int) -> list[Step]:
    """What a run of release `version` changes, among `releases` in commit order (its own among them)."""
    index = next(i for i, release in enumerate(releases) if release.version == version)
    steps = [_step(releases[index - 1], version, run_id)] if index > 0 else []
    if index + 1 < len(releases):
        later = releases[index + 1]
        steps += [_step(releases[index], later.version, head) for head in later.run_ids]
    return steps


def every_step(releases: Sequence[Release]) -> list[Step]:
    """Every run's step among `releases` in commit order."""
    return [_step(base, head.version, run) for base, head in pairwise(releases) for run in head.run_ids]


def has_step(n_base: int, n_head: int) -> bool:
    """A series one of the two releases did not measure has no step."""
    return bool(n_base and n_head)

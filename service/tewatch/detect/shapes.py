"""Changes of other shapes than a step in H200 noise, modelled on two real asv histories (django-asv's
ubuntu-latest results, python 3.12), for the evaluation to replay beside the steps (evaluation.py).

- A huge recent jump onto a noisier level: `FormValidate.time_form_validate` ran 77 times slower (median
  of the newest 18 commits over the 285 before) and its new level spread 17 % (log standard deviation)
  where the old one spread 2 %.
- A change in the share of slow runs: `QCreate.time_create_small` runs at one of two speeds 30 % apart
  (each with a robust spread of 2.3-2.9 %); slow in 35 % of the runs before a commit, 80 % after it.
  The same two speeds at a steady share are the shape's own null: any change point there is false.

Each shape makes `(values, first changed index or None)` for `commits` commits.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from tewatch.detect.noise import NoiseProfile

JUMP = 77.0
JUMP_COMMITS = 18
JUMP_SPREAD = 0.17
SPEED_RATIO = 1.30
SPEED_SPREAD = 0.026
SLOW_SHARE_BEFORE = 0.35
SLOW_SHARE_AFTER = 0.80

Maker = Callable[[np.random.Generator, int], tuple[np.ndarray, int | None]]


@dataclass(frozen=True)
class Shape:
    name: str
    make: Maker
    changes: bool  # False: the shape's null, where every detection is a false alarm


def recent_jump(profile: NoiseProfile) -> Shape:
    def make(rng: np.random.Generator, commits: int) -> tuple[np.ndarray, int | None]:
        values = profile.commit_values(rng, (commits,))
        at = commits - JUMP_COMMITS
        values[at:] *= JUMP * np.exp(rng.normal(0.0, JUMP_SPREAD, JUMP_COMMITS))
        return values, at

    return Shape(f"x{JUMP:g} on the newest {JUMP_COMMITS}, {profile.name}", make, changes=True)


def two_speeds(rng: np.random.Generator, slow_share: np.ndarray) -> np.ndarray:
    slow = rng.random(len(slow_share)) < slow_share
    return np.exp(rng.normal(0.0, SPEED_SPREAD, len(slow_share))) * np.where(slow, SPEED_RATIO, 1.0)


def slow_share_shift(rng: np.random.Generator, commits: int) -> tuple[np.ndarray, int | None]:
    at = int(rng.integers(commits // 5, commits - commits // 5))
    share = np.where(np.arange(commits) < at, SLOW_SHARE_BEFORE, SLOW_SHARE_AFTER)
    return two_speeds(rng, share), at


def steady_share(share: float) -> Maker:
    def make(rng: np.random.Generator, commits: int) -> tuple[np.ndarray, int | None]:
        return two_speeds(rng, np.full(commits, share)), None

    return make


def django_shapes(profiles: list[NoiseProfile]) -> list[Shape]:
    before, after = round(SLOW_SHARE_BEFORE * 100), round(SLOW_SHARE_AFTER * 100)
    return [
        *(recent_jump(profile) for profile in profiles),
        Shape(f"slow runs {before} % -> {after} %", slow_share_shift, changes=True),
        Shape(f"slow runs steady at {before} %", steady_share(SLOW_SHARE_BEFORE), changes=False),
        Shape(f"slow runs steady at {after} %", steady_share(SLOW_SHARE_AFTER), changes=False),
    ]

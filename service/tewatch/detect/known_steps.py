"""Synthetic branch histories whose steps are known, in the shapes that history detection gets wrong:
short levels, reverts, steps next to drifts, environment-wide shifts, and single clean steps.

Each history is one series of `commits` values on H200 noise (noise.py) with its true steps: the index of
the first point on the new level and the relative change there. A group of histories shares an
environment (the series of one machine and asv environment), so a shift of the whole environment is the
same step in most of them. Seeded: the same arguments give the same histories.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from tewatch.detect.noise import H200_PROFILES, NoiseProfile

SHORT_LEVEL_FASTER = 0.2  # 5x faster for a few commits, then 4.5x slower again
SHORT_LEVEL_BACK = 4.5
SPIKE_LEVEL = 95.0  # 95x slower for 21 commits, then halved
SPIKE_COMMITS = 21
ENVIRONMENT_SHIFT = 0.05  # every series of an environment +5 % for 24 commits, then back
ENVIRONMENT_SHIFT_COMMITS = 24
ENVIRONMENT_SERIES = 40
ENVIRONMENT_UNMOVED = 0.15  # the share of an environment's series the shift leaves alone


@dataclass(frozen=True)
class KnownStep:
    at: int  # index of the first point on the new level
    change: float  # relative change of the level there, new / old - 1


@dataclass(frozen=True)
class KnownHistory:
    scenario: str
    values: np.ndarray
    steps: tuple[KnownStep, ...]
    group: str  # the environment (machine and asv environment) the series belongs to


Maker = Callable[[np.random.Generator, NoiseProfile, int, str], list[KnownHistory]]


def _levels(commits: int, steps: list[KnownStep]) -> np.ndarray:
    level = np.ones(commits)
    for step in steps:
        level[step.at :] *= 1.0 + step.change
    return level


def _make(
    scenario: str,
    rng: np.random.Generator,
    profile: NoiseProfile,
    commits: int,
    steps: list[KnownStep],
    group: str,
    drift: np.ndarray | None = None,
) -> KnownHistory:
    values = _levels(commits, steps) * profile.commit_values(rng, (commits,))
    if drift is not None:
        values *= drift
    return KnownHistory(scenario, values, tuple(steps), group)


def _middle(rng: np.random.Generator, commits: int, room: int) -> int:
    return int(rng.integers(commits // 5, commits - commits // 5 - room))


def short_level(
    rng: np.random.Generator, profile: NoiseProfile, commits: int, group: str
) -> list[KnownHistory]:
    """5x faster for 5 to 20 commits, then 4.5x slower again."""
    length = int(rng.integers(5, 21))
    at = _middle(rng, commits, length)
    steps = [KnownStep(at, SHORT_LEVEL_FASTER - 1.0), KnownStep(at + length, SHORT_LEVEL_BACK - 1.0)]
    return [_make("short level (5x faster, then back)", rng, profile, commits, steps, group)]


def spike_level(
    rng: np.random.Generator, profile: NoiseProfile, commits: int, group: str
) -> list[KnownHistory]:
    """95x slower for 21 commits, then halved."""
    at = _middle(rng, commits, SPIKE_COMMITS)
    steps = [KnownStep(at, SPIKE_LEVEL - 1.0), KnownStep(at + SPIKE_COMMITS, -0.5)]
    return [_make("95x slower for 21, then halved", rng, profile, commits, steps, group)]


def revert(rng: np.random.Generator, profile: NoiseProfile, commits: int, group: str) -> list[KnownHistory]:
    """A regression of 10 to 40 %, reverted 5 to 60 commits later."""
    length = int(rng.integers(5, 61))
    size = float(rng.uniform(0.1, 0.4))
    at = _middle(rng, commits, length)
    steps = [KnownStep(at, size), KnownStep(at + length, 1.0 / (1.0 + size) - 1.0)]
    return [_make("regression, reverted", rng, profile, commits, steps, group)]


def step_next_to_drift(
    rng: np.random.Generator, profile: NoiseProfile, commits: int, group: str
) -> list[KnownHistory]:
    """A step of 10 to 40 % either way, right after (or before) 60 commits drifting by 8 % either way."""
    size = float(rng.uniform(0.1, 0.4)) * rng.choice([-1.0, 1.0])
    at = _middle(rng, commits, 60) + 60
    drift = np.ones(commits)
    slope = 0.08 * rng.choice([-1.0, 1.0]) / 60
    if rng.random() < 0.5:
        drift[at - 60 : at] = np.exp(slope * np.arange(1, 61))
        drift[at:] = drift[at - 1]
    else:
        drift[at : at + 60] = np.exp(slope * np.arange(1, 61))
        drift[at + 60 :] = drift[at + 59]
    return [_make("step next to a drift", rng, profile, commits, [KnownStep(at, size)], group, drift)]


def clean_step(
    rng: np.random.Generator, profile: NoiseProfile, commits: int, group: str
) -> list[KnownHistory]:
    """One step of 5 to 40 % either way."""
    size = float(rng.uniform(0.05, 0.4)) * rng.choice([-1.0, 1.0])
    return [_make("clean step", rng, profile, commits, [KnownStep(_middle(rng, commits, 0), size)], group)]


def environment_shift(
    rng: np.random.Generator, profile: NoiseProfile, commits: int, group: str
) -> list[KnownHistory]:
    """Most series of one environment +5 % for 24 commits, then back; the rest unmoved."""
    at = _middle(rng, commits, ENVIRONMENT_SHIFT_COMMITS)
    back = 1.0 / (1.0 + ENVIRONMENT_SHIFT) - 1.0
    shifted = [KnownStep(at, ENVIRONMENT_SHIFT), KnownStep(at + ENVIRONMENT_SHIFT_COMMITS, back)]
    return [
        _make(
            "environment +5 % for 24, then back",
            rng,
            H200_PROFILES["matmul"],
            commits,
            [] if rng.random() < ENVIRONMENT_UNMOVED else shifted,
            group,
        )
        for _ in range(ENVIRONMENT_SERIES)
    ]


SCENARIOS: dict[str, Maker] = {
    "short level": short_level,
    "95x for 21": spike_level,
    "revert": revert,
    "step next to drift": step_next_to_drift,
    "clean step": clean_step,
    "environment shift": environment_shift,
}


def known_histories(series: int, commits: int, seed: int) -> Iterator[KnownHistory]:
    """`series` histories of every scenario (environment shifts: `series` environments of
    ENVIRONMENT_SERIES series each), cycling through the H200 noise profiles."""
    rng = np.random.default_rng(seed)
    profiles = list(H200_PROFILES.values())
    for name, make in SCENARIOS.items():
        for i in range(series):
            yield from make(rng, profiles[i % len(profiles)], commits, f"{name} {i}")

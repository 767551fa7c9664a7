"""Training trajectories: a loss per optimizer step, judged against another trajectory within a band.

The band at each step is learned from trajectories of identical code (an A/A's arms, the history of one
case at one TE version): SPREAD_MULTIPLE times the spread (largest minus smallest loss) they showed at that
step, and never below a floor of `rtol` times the reference's loss, like Megatron-LM's golden values
(`lm loss` held equal where the run is deterministic, else to a relative 5 %):

- a recipe against bf16 eager of the same run: RECIPE_RTOL, as low precision trains a little differently;
- compiled or graphed against eager of the same recipe, and a pull request's head against its base: the
  same computation, so 0 when every trajectory of identical code was equal to the last bit (any difference
  is real), else NOISE_RTOL.

Where the candidate leaves the band it *diverges*, at the first such step; a step whose loss is finite on
one side and not on the other diverges there. Steps are numbered from 1 (step k is `loss[k - 1]`).
"""

from __future__ import annotations

import enum
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

SPREAD_MULTIPLE = 4.0
RECIPE_RTOL = 0.05
NOISE_RTOL = 0.002

Losses = Sequence[float | None]


class Pairing(str, enum.Enum):
    """What a comparison holds against what."""

    recipe_vs_bf16 = "recipe_vs_bf16"  # a recipe against bf16 eager of the same run
    execution_vs_eager = "execution_vs_eager"  # compiled or graphed against eager of the same recipe
    head_vs_base = "head_vs_base"  # a pull request's head against its merge base

    @property
    def same_code(self) -> bool:
        return self is not Pairing.recipe_vs_bf16


class TrajectoryVerdict(str, enum.Enum):
    equal = "equal"  # to the last bit at every step
    within = "within"  # different, never beyond the band
    diverged = "diverged"
    incomparable = "incomparable"  # different numbers of steps


def _array(losses: Losses) -> np.ndarray:
    return np.array([math.nan if v is None else v for v in losses], dtype=float)


@dataclass(frozen=True)
class Band:
    """The spread per step of trajectories of identical code; `runs`: how many it was learned from."""

    spread: tuple[float, ...]
    runs: int

    @property
    def deterministic(self) -> bool:
        """Learned from two runs or more, all equal at every step."""
        return self.runs >= 2 and not any(self.spread)

    def widest(self, other: Band) -> Band:
        """The band of a comparison between two cases: the larger spread at each step."""
        if not self.spread or not other.spread:
            return self if self.spread else other
        steps = min(len(self.spread), len(other.spread))
        spread = tuple(max(a, b) for a, b in zip(self.spread[:steps], other.spread[:steps], strict=True))
        return Band(spread, min(self.runs, other.runs))

    def tolerance(self, pairing: Pairing, reference: Losses) -> np.ndarray:
        """Per step, how far the candidate's loss may lie from the reference's."""
        values = np.abs(_array(reference))
        spread = np.zeros(len(values))
        known = min(len(values), len(self.spread))
        spread[:known] = self.spread[:known]
        rtol = (0.0 if self.deterministic else NOISE_RTOL) if pairing.same_code else RECIPE_RTOL
        return np.maximum(SPREAD_MULTIPLE * spread, rtol * np.nan_to_num(values, nan=0.0))


def learn_band(trajectories: Sequence[Losses]) -> Band:
    """The band of trajectories of identical code: at each step the largest minus the smallest finite loss
    (0 where fewer than two are finite); over the steps all of them have."""
    if not trajectories:
        return Band((), 0)
    steps = min(len(t) for t in trajectories)
    stacked = np.array([_array(t[:steps]) for t in trajectories]).reshape(len(trajectories), steps)
    spread = []
    for column in stacked.T:
        finite = column[np.isfinite(column)]
        spread.append(float(finite.max() - finite.min()) if len(finite) >= 2 else 0.0)
    return Band(tuple(spread), len(trajectories))


@dataclass(frozen=True)
class TrajectoryComparison:
    pairing: Pairing
    verdict: TrajectoryVerdict
    steps: int
    first_divergent_step: int | None = None
    difference_there: float | None = None  # candidate - reference at that step (None: not finite)
    tolerance_there: float | None = None
    max_abs_difference: float | None = None  # over the steps where both are finite
    max_difference_step: int | None = None
    final_difference: float | None = None  # candidate - reference at the last step, where both are finite

    def describe(self, reference: str) -> str:
        """`parts from bf16 eager at step 12 (+0.031, band 0.012); largest 0.41 at step 50, final +0.41`."""
        if self.verdict is TrajectoryVerdict.incomparable:
            return f"not comparable with {reference}: a different number of steps"
        if self.verdict is TrajectoryVerdict.equal:
            return f"equal to {reference} at all {self.steps} steps"
        found = []
        if self.first_divergent_step is not None:
            there = (
                "the loss is finite on one side only"
                if self.difference_there is None
                else f"{self.difference_there:+.4g}, band {self.tolerance_there:.3g}"
            )
            found.append(f"parts from {reference} at step {self.first_divergent_step} ({there})")
        else:
            found.append(f"within the band of {reference}")
        if self.max_abs_difference is not None:
            found.append(f"largest {self.max_abs_difference:.4g} at step {self.max_difference_step}")
        if self.final_difference is not None:
            found.append(f"final {self.final_difference:+.4g}")
        return "; ".join(found)


def compare_trajectories(
    pairing: Pairing, reference: Losses, candidate: Losses, band: Band
) -> TrajectoryComparison:
    """The candidate's loss against the reference's, step by step, within `band`."""
    if len(reference) != len(candidate):
        return TrajectoryComparison(
            pairing, TrajectoryVerdict.incomparable, min(len(reference), len(candidate))
        )
    ref, cand = _array(reference), _array(candidate)
    steps = len(ref)
    tolerance = band.tolerance(pairing, reference)
    both = np.isfinite(ref) & np.isfinite(cand)
    one_sided = np.isfinite(ref) != np.isfinite(cand)
    difference = np.where(both, cand - ref, 0.0)
    beyond = one_sided | (np.abs(difference) > tolerance)
    if not beyond.any() and not difference.any():
        return TrajectoryComparison(
            pairing,
            TrajectoryVerdict.equal,
            steps,
            max_abs_difference=0.0,
            max_difference_step=1 if steps else None,
            final_difference=0.0 if steps else None,
        )
    largest = int(np.argmax(np.abs(difference)))
    finite_steps = np.flatnonzero(both)
    final = float(difference[finite_steps[-1]]) if len(finite_steps) else None
    first: int | None = None
    there: float | None = None
    allowed: float | None = None
    if beyond.any():
        index = int(np.argmax(beyond))
        first, allowed = index + 1, float(tolerance[index])
        there = float(difference[index]) if both[index] else None
    return TrajectoryComparison(
        pairing,
        TrajectoryVerdict.diverged if first is not None else TrajectoryVerdict.within,
        steps,
        first_divergent_step=first,
        difference_there=there,
        tolerance_there=allowed,
        max_abs_difference=float(abs(difference[largest])) if both.any() else None,
        max_difference_step=largest + 1 if both.any() else None,
        final_difference=final,
    )

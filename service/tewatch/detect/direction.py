"""Which way is better for a unit, and what a relative change means in that light."""

from __future__ import annotations

import enum

from tewatch.core.units import HIGHER_IS_BETTER_UNITS


class Direction(str, enum.Enum):
    regression = "regression"
    improvement = "improvement"


def higher_is_better(unit: str) -> bool:
    """Higher is better for throughputs ("TFLOP/s", "tokens/s"), shares ("fraction") and signal-to-noise ratios ("dB");
    lower for everything else."""
    return unit in HIGHER_IS_BETTER_UNITS


def direction_of(effect: float, higher_is_better: bool) -> Direction:
    """`effect` is the relative change new/old - 1; a positive change is worse unless higher is better."""
    worse = effect < 0 if higher_is_better else effect > 0
    return Direction.regression if worse else Direction.improvement

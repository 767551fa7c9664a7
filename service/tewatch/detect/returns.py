"""Regressions that a series has since undone: the level after a later change point is back within the
limits of the regression's baseline (or better), so the regression no longer holds."""

from __future__ import annotations

from collections.abc import Sequence

from tewatch.detect.changepoint import ChangePoint
from tewatch.detect.direction import Direction, direction_of


def back_to_baseline(regression: ChangePoint, later: ChangePoint, higher_is_better: bool) -> bool:
    """Whether the level after `later` is no worse than what `regression`'s baseline counted as unchanged."""
    if higher_is_better:
        return later.level_after >= regression.lower_limit
    return later.level_after <= regression.upper_limit


def returns(change_points: Sequence[ChangePoint], higher_is_better: bool) -> dict[int, int]:
    """{k: j} for every regression k (positions in `change_points`, in series order) whose series is back
    at its earlier level after change point j, the first later one to bring it back."""
    found = {}
    for k, cp in enumerate(change_points):
        if direction_of(cp.effect, higher_is_better) is not Direction.regression:
            continue
        for j in range(k + 1, len(change_points)):
            if back_to_baseline(cp, change_points[j], higher_is_better):
                found[k] = j
                break
    return found

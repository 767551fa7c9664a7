"""What a branch's change points do to what is stored, decided without the store: a change point found
again where a stored one was (it moved as history grew) updates it; a stored change point no longer found
while its commit is still in the history is withdrawn; a new regression opens an alert unless it is part
of its whole environment's shift; and an existing alert is resolved as part of such a shift, resolved as
returned, or followed (opened again if its return is no longer shown, its range and effect kept current)."""

from __future__ import annotations

import enum
from collections.abc import Container

from tewatch.detect.changepoint import ChangePoint
from tewatch.detect.direction import Direction


def is_same_change(
    stored_direction: str, stored_at: int | None, direction: Direction, cp: ChangePoint, slack: int
) -> bool:
    """A stored change point (its direction, and its commit's position in the history, None when the
    history no longer holds it) is `cp` moved: the same direction, its commit within cp's range widened by
    `slack` (the persistence) on either side."""
    return (
        stored_direction == direction.value
        and stored_at is not None
        and cp.first_possible_index - slack <= stored_at <= cp.last_possible_index + slack
    )


def is_withdrawn(stored_commit: int, history_commits: Container[int]) -> bool:
    """A stored change point found again nowhere: withdrawn when the history still holds its commit
    (later history no longer supports it); kept when its commit has left the history read."""
    return stored_commit in history_commits


def opens_alert(direction: Direction, in_environment_shift: bool) -> bool:
    """A new change point opens an alert when it is a regression that its environment's shift's alert
    does not already cover."""
    return direction is Direction.regression and not in_environment_shift


class AlertStep(enum.Enum):
    part_of_shift = "part_of_shift"  # resolved: its environment's shift has the alert
    returned = "returned"  # resolved: the series is back at its earlier level
    follow = "follow"  # kept on the change point (opened again if its return is no longer shown)


def alert_step(in_environment_shift: bool, still_open: bool, returned: bool) -> AlertStep:
    if in_environment_shift and still_open:
        return AlertStep.part_of_shift
    if returned:
        return AlertStep.returned
    return AlertStep.follow

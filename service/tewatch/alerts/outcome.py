"""What one attempt at a delivery came to, whatever it was sent to (a webhook receiver, GitHub)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Outcome:
    status_code: int | None = None  # the last HTTP answer, if any
    error: str | None = None  # None: delivered
    response_head: str | None = None
    retry_after: float | None = None  # seconds the far side asked to wait before the next attempt
    final: bool = False  # no retry can turn this into a delivery

    @property
    def ok(self) -> bool:
        return self.error is None

"""How far past the service's clock an uploaded commit time may lie: a commit dated later would sort
after every real one and hold a branch's "latest" for years."""

from __future__ import annotations

import time
from datetime import UTC, datetime

CLOCK_SKEW_SECONDS = 3600


def too_far_ahead(committed: datetime) -> bool:
    return committed.timestamp() > time.time() + CLOCK_SKEW_SECONDS


def future_commit_message(sha: str, committed: datetime) -> str:
    shown = committed.astimezone(UTC).isoformat()
    return (
        f"commit {sha} is dated {shown}, later than the service's clock allows (now plus "
        f"{CLOCK_SKEW_SECONDS // 60} minutes)"
    )

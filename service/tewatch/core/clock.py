"""Times as the service keeps them: UTC, whether they came with a zone, without one (SQLite keeps no offset,
so a stored time reads back naive) or as epoch seconds; and how far past the service's clock an uploaded
commit time may lie: a commit dated later would sort after every real one and hold a branch's "latest" for
years."""

from __future__ import annotations

import time
from datetime import UTC, datetime

CLOCK_SKEW_SECONDS = 3600


def as_utc(moment: datetime) -> datetime:
    """The moment in UTC; a time without a zone is taken as UTC."""
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def from_epoch_seconds(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


def too_far_ahead(committed: datetime) -> bool:
    return committed.timestamp() > time.time() + CLOCK_SKEW_SECONDS


def future_commit_message(sha: str, committed: datetime) -> str:
    shown = committed.astimezone(UTC).isoformat()
    return (
        f"commit {sha} is dated {shown}, later than the service's clock allows (now plus "
        f"{CLOCK_SKEW_SECONDS // 60} minutes)"
    )

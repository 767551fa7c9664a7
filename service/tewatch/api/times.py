"""Times in answers: always with their zone. SQLite keeps no offset, so a stored UTC time reads back
naive; the OpenAPI document promises RFC 3339 date-time, which requires one."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

from pydantic import AfterValidator


def _as_utc(moment: datetime) -> datetime:
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


UtcTime = Annotated[datetime, AfterValidator(_as_utc)]

"""Times in answers: always with their zone. SQLite keeps no offset, so a stored UTC time reads back
naive; the OpenAPI document promises RFC 3339 date-time, which requires one."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import AfterValidator

from tewatch.core.clock import as_utc

UtcTime = Annotated[datetime, AfterValidator(as_utc)]

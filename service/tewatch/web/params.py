"""Integers in paths and queries, bounded by what the store's columns hold, so a number out of range is
FastAPI's 422 instead of an error inside the database: ids, pull request numbers and world sizes live in
32-bit columns (PostgreSQL `integer`), offsets may go up to 64 bits. Times in queries are ISO 8601, taken
as UTC without a zone, inside the window the store keeps (1970 to 3000), else 422."""

from datetime import datetime
from typing import Annotated

from fastapi import Path, Query
from pydantic import AfterValidator

from tewatch.core.clock import as_utc
from tewatch.store.schema.limits import INT32_MAX, INT32_MIN, INT64_MAX, time_problem


def _in_utc(value: datetime | None) -> datetime | None:
    if value is None:
        return None
    problem = time_problem(value)
    if problem:
        raise ValueError(problem)
    return as_utc(value)


PathInt = Annotated[int, Path(ge=INT32_MIN, le=INT32_MAX)]
QueryInt = Annotated[int, Query(ge=INT32_MIN, le=INT32_MAX)]
OptionalQueryInt = Annotated[int | None, Query(ge=INT32_MIN, le=INT32_MAX)]
Offset = Annotated[int, Query(ge=0, le=INT64_MAX)]
OptionalQueryTime = Annotated[datetime | None, AfterValidator(_in_utc)]

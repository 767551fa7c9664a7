"""Integers in paths and queries, bounded by what the store's columns hold, so a number out of range is
FastAPI's 422 instead of an error inside the database: ids, pull request numbers and world sizes live in
32-bit columns (PostgreSQL `integer`), offsets may go up to 64 bits."""

from typing import Annotated

from fastapi import Path, Query
from tewatch.store.limits import INT32_MAX, INT32_MIN, INT64_MAX

PathInt = Annotated[int, Path(ge=INT32_MIN, le=INT32_MAX)]
QueryInt = Annotated[int, Query(ge=INT32_MIN, le=INT32_MAX)]
OptionalQueryInt = Annotated[int | None, Query(ge=INT32_MIN, le=INT32_MAX)]
Offset = Annotated[int, Query(ge=0, le=INT64_MAX)]

"""`column IN (many values)` with the values as one JSON parameter: nothing to render or plan per value.

The database unpacks the list itself (PostgreSQL `json_array_elements_text`, SQLite `json_each`) and
probes the column's index once per value. One JSON string is also cheaper to send than an array of
strings, which the driver would quote one by one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import JSON, ColumnElement, Connection, Text, bindparam, cast, func, select
from sqlalchemy.orm import QueryableAttribute

from tewatch.store.engine.database import json_text


def in_key_list(
    conn: Connection,
    column: ColumnElement[Any] | QueryableAttribute[Any],
    values: Sequence[Any],
    name: str = "keys",
):
    listed_json = bindparam(name, json_text(list(values)), type_=Text)
    if conn.dialect.name == "postgresql":
        listed = func.json_array_elements_text(cast(listed_json, JSON)).table_valued("value")
        return column.in_(select(cast(listed.c.value, column.type)))
    listed = func.json_each(listed_json).table_valued("value")
    return column.in_(select(listed.c.value))

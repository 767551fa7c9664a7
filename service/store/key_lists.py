"""`column IN (many values)` as one bound parameter: nothing to render or plan per value.

PostgreSQL takes an array (`= ANY(:keys)`), SQLite a JSON list (`IN (SELECT value FROM json_each(:keys))`).
Both let the planner probe the column's index once per value instead of scanning the table.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import ARRAY, ColumnElement, Connection, any_, bindparam, func, select
from tewatch.store.database import json_text


def in_key_list(conn: Connection, column: ColumnElement, values: Sequence[Any], name: str = "keys"):
    if conn.dialect.name == "postgresql":
        return column == any_(bindparam(name, list(values), type_=ARRAY(column.type)))
    listed = func.json_each(bindparam(name, json_text(list(values)))).table_valued("value")
    return column.in_(select(listed.c.value))

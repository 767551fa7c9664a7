"""Get-or-create many rows by a unique key, safe against concurrent writers on SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import Connection, Table, select, tuple_
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

CHUNK = 500


def insert_ignoring_conflicts(
    conn: Connection, table: Table, rows: list[dict[str, Any]], keys: Sequence[str]
):
    insert = pg_insert if conn.dialect.name == "postgresql" else sqlite_insert
    return insert(table).on_conflict_do_nothing(index_elements=list(keys))


def _chunks(items: list, size: int = CHUNK) -> Iterable[list]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _lookup(conn: Connection, table: Table, keys: Sequence[str], wanted: list[tuple]) -> dict[tuple, Any]:
    found: dict[tuple, Any] = {}
    key_columns = [table.c[k] for k in keys]
    id_column = table.c.id
    for chunk in _chunks(wanted):
        if len(keys) == 1:
            condition = key_columns[0].in_([k[0] for k in chunk])
        else:
            condition = tuple_(*key_columns).in_(chunk)
        for row in conn.execute(select(id_column, *key_columns).where(condition)):
            found[tuple(row[1:])] = row[0]
    return found


def get_or_create_ids(
    conn: Connection, table: Table, rows: list[dict[str, Any]], keys: Sequence[str]
) -> dict[tuple, int]:
    """Map each row's key tuple to its id, inserting the rows that do not exist yet.

    Inserts go in key order so that concurrent PostgreSQL transactions take row locks in the same order.
    """
    by_key = {tuple(row[k] for k in keys): row for row in rows}
    ids = _lookup(conn, table, keys, sorted(by_key))
    missing = [by_key[k] for k in sorted(by_key) if k not in ids]
    if missing:
        statement = insert_ignoring_conflicts(conn, table, missing, keys)
        for chunk in _chunks(missing):
            conn.execute(statement, chunk)
        ids.update(_lookup(conn, table, keys, [k for k in sorted(by_key) if k not in ids]))
    return ids

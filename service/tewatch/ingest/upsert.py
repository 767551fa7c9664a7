"""Get-or-create many rows by a unique key, safe against concurrent writers on SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from sqlalchemy import Connection, Table, select, tuple_
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from tewatch.store.reads.key_lists import in_key_list

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
    key_columns = [table.c[k] for k in keys]
    id_column = table.c.id
    if len(keys) == 1:
        column = key_columns[0]
        condition = in_key_list(conn, column, [k[0] for k in wanted])
        rows = conn.execute(select(id_column, column).where(condition)).all()
        return {(key,): row_id for row_id, key in rows}
    found: dict[tuple, Any] = {}
    for chunk in _chunks(wanted):
        rows = conn.execute(select(id_column, *key_columns).where(tuple_(*key_columns).in_(chunk))).all()
        found.update((tuple(row[1:]), row[0]) for row in rows)
    return found


def get_or_create_ids(
    conn: Connection, table: Table, rows: list[dict[str, Any]], keys: Sequence[str]
) -> dict[tuple, int]:
    """Map each row's key tuple to its id, inserting the rows that do not exist yet."""
    by_key = {tuple(row[k] for k in keys): row for row in rows}
    return get_or_create_lazily(conn, table, {key: by_key[key].copy for key in by_key}, keys)


def get_or_create_lazily(
    conn: Connection,
    table: Table,
    row_makers: Mapping[tuple, Callable[[], dict[str, Any]]],
    keys: Sequence[str],
) -> dict[tuple, int]:
    """Like get_or_create_ids, building a row only for a key that is not stored yet.

    Inserts go in key order so that concurrent PostgreSQL transactions take row locks in the same order.
    """
    ids = _lookup(conn, table, keys, list(row_makers))
    missing_keys = sorted(k for k in row_makers if k not in ids)
    if missing_keys:
        missing = [row_makers[k]() for k in missing_keys]
        statement = insert_ignoring_conflicts(conn, table, missing, keys)
        for chunk in _chunks(missing):
            conn.execute(statement, chunk)
        ids.update(_lookup(conn, table, keys, missing_keys))
    return ids

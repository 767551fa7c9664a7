"""Many-row inserts without per-row statement work: PostgreSQL binary COPY, executemany elsewhere.

Values pass through each column type's bind processor first, so what lands in the table is exactly what
an ORM or Core insert would have written (JSON text, SQLite's datetime strings, enum values).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from sqlalchemy import JSON, Connection, Table

from tewatch.store.engine.database import json_text

Processor = Callable[[Any], Any]
TEXT_OID, JSON_OID, JSONB_OID = 25, 114, 3802  # PostgreSQL's fixed type OIDs


def insert_rows(
    conn: Connection,
    table: Table,
    columns: Sequence[str],
    rows: Iterable[Sequence[Any]],
    order: Callable[[Sequence[Any]], Any] | None = None,
) -> int:
    """Insert every row (values in the order of `columns`) in the caller's transaction; returns the count.

    With `order`, a sort key, the rows go in that order (sorted once bound: binding processes runs of one
    object, such as a benchmark's start time, once)."""
    processed = bound_rows(conn, table, columns, rows)
    if order is not None:
        processed.sort(key=order)
    if conn.dialect.name == "postgresql":
        return _copy(conn, table, columns, processed)
    return _executemany(conn, table, columns, processed)


def _processors(conn: Connection, table: Table, columns: Sequence[str]) -> list[tuple[int, Processor]]:
    found: list[tuple[int, Processor]] = []
    for index, name in enumerate(columns):
        column_type = table.c[name].type
        if isinstance(column_type, JSON):
            # The text the bind processor would write (the engine's serializer is json_text, and None is
            # 'null'), without its per-value wrapping: JSON samples are most of what ingest writes.
            found.append((index, json_text))
            continue
        processor = column_type.dialect_impl(conn.dialect).bind_processor(conn.dialect)
        if processor is not None:
            found.append((index, processor))
    return found


def bound_rows(
    conn: Connection, table: Table, columns: Sequence[str], rows: Iterable[Sequence[Any]]
) -> list[Sequence[Any]]:
    """The rows as the driver receives them: each value through its column type's bind processor."""
    rows = list(rows)
    processors = _processors(conn, table, columns)
    if not processors or not rows:
        return rows
    as_stored: list[Sequence[Any]] = list(zip(*rows, strict=True))
    by_column: list[Iterable[Any]] = list(as_stored)
    for index, processor in processors:
        by_column[index] = _apply(processor, as_stored[index])
    return list(zip(*by_column, strict=True))


def _apply(processor: Processor, values: Sequence[Any]) -> Iterable[Any]:
    if len(values) < 2 or values[0] is not values[1]:
        return map(processor, values)
    # runs of one object (a benchmark's start time shared by its rows): process each run once
    out: list[Any] = []
    last: Any = out  # a sentinel no value is
    processed = None
    for value in values:
        if value is not last:
            last, processed = value, processor(value)
        out.append(processed)
    return out


def _copy(conn: Connection, table: Table, columns: Sequence[str], rows: list[Sequence[Any]]) -> int:
    """Binary COPY: the server's own column types tell psycopg how to encode each value."""
    preparer = conn.dialect.identifier_preparer
    table_name = preparer.format_table(table)
    type_oids: dict[str, int] = dict(
        conn.exec_driver_sql(
            "SELECT attname, atttypid FROM pg_attribute"
            " WHERE attrelid = %(table)s::regclass AND attname = ANY(%(columns)s) AND NOT attisdropped",
            {"table": table_name, "columns": list(columns)},
        ).all()
    )
    if JSONB_OID in type_oids.values():
        raise ValueError(f"{table.name}: jsonb columns need their binary format, which insert_rows lacks")
    # json's binary form is its text: the serialised JSON goes as text, not as a JSON-encoded string
    oids = [TEXT_OID if type_oids[c] == JSON_OID else type_oids[c] for c in columns]
    target = f"{table_name} ({', '.join(preparer.quote(c) for c in columns)})"
    driver_connection = conn.connection.driver_connection
    if driver_connection is None:
        raise RuntimeError("COPY needs the connection's open psycopg connection")
    with (
        driver_connection.cursor() as cursor,
        cursor.copy(f"COPY {target} FROM STDIN (FORMAT BINARY)") as copy,
    ):
        copy.set_types(oids)
        for row in rows:
            copy.write_row(row)
    return len(rows)


def _executemany(conn: Connection, table: Table, columns: Sequence[str], rows: list[Sequence[Any]]) -> int:
    if not rows:
        return 0
    statement = table.insert().compile(dialect=conn.dialect, column_keys=list(columns))
    names = statement.positiontup
    if names is None or list(names) != list(columns):
        raise ValueError(f"{conn.dialect.name}: expected a positional insert over {list(columns)}")
    cursor = conn.connection.cursor()
    try:
        cursor.executemany(statement.string, rows)
    finally:
        cursor.close()
    return len(rows)

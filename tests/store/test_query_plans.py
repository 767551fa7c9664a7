"""SQLite reads the history and the latest verdicts through indexes: no query of a series' points, a case's
verdicts or the latest verdicts scans the results or verdicts tables (what keeps pages fast at 10M)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest
from sqlalchemy import Connection, event, select

from tests.uploads import bundle_of, tiny_run
from tewatch.ingest.service import ingest_bundle
from tewatch.store import queries, series_reads
from tewatch.store.database import make_engine
from tewatch.store.migrate import upgrade
from tewatch.store.models import Series

BIG_TABLES = ("results", "verdicts")


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Iterator:
    url = f"sqlite:///{tmp_path_factory.mktemp('plans')}/store.sqlite3"
    upgrade(url)
    engine = make_engine(url)
    for index in (0, 1):
        ingest_bundle(engine, bundle_of(tiny_run(index), branch="main"))
    try:
        yield engine
    finally:
        engine.dispose()


@contextmanager
def statements_of(conn: Connection) -> Iterator[list[tuple[str, object]]]:
    """The SELECT statements `conn` sends while inside, with their parameters."""
    seen: list[tuple[str, object]] = []

    def keep(_conn, _cursor, statement, parameters, _context, _executemany) -> None:
        if statement.lstrip().upper().startswith(("SELECT", "WITH")):
            seen.append((statement, parameters))

    event.listen(conn, "before_cursor_execute", keep)
    try:
        yield seen
    finally:
        event.remove(conn, "before_cursor_execute", keep)


def plans(conn: Connection, read: Callable[[], object]) -> list[list[str]]:
    """SQLite's query plan (EXPLAIN QUERY PLAN details) of every statement `read` sends."""
    with statements_of(conn) as seen:
        read()
    assert seen
    driver = conn.connection.driver_connection
    return [[row[3] for row in driver.execute(f"EXPLAIN QUERY PLAN {sql}", params)] for sql, params in seen]


def _assert_no_scan_of_big_tables(found: list[list[str]]) -> None:
    for plan in found:
        for step in plan:
            assert not any(step.startswith(f"SCAN {table}") for table in BIG_TABLES), plan


def _uses(found: list[list[str]], table: str, index: str) -> bool:
    return any(
        step.startswith(f"SEARCH {table} USING") and f"INDEX {index} " in step
        for plan in found
        for step in plan
    )


def test_a_series_is_read_from_the_series_points_index(store):
    with store.connect() as conn:
        series_id = conn.scalar(select(Series.id).order_by(Series.id).limit(1))
        found = plans(conn, lambda: queries.get_series(conn, series_id))
        _assert_no_scan_of_big_tables(found)
        assert _uses(found, "results", "ix_results_series_points")


def test_the_pages_read_a_series_tail_and_its_case_verdicts_from_indexes(store):
    with store.connect() as conn:
        series_id = conn.scalar(select(Series.id).order_by(Series.id).limit(1))
        header = series_reads.series_header(conn, series_id)
        assert header is not None
        found = plans(
            conn, lambda: series_reads.series_points(conn, header, "main", last=30, with_samples=False)
        )
        _assert_no_scan_of_big_tables(found)
        assert _uses(found, "results", "ix_results_series_points")
        assert _uses(found, "verdicts", "ix_verdicts_case_points")


@pytest.mark.parametrize("branch", [None, "main"])
def test_latest_verdicts_probe_verdicts_by_id(store, branch):
    with store.connect() as conn:
        found = plans(conn, lambda: queries.latest_verdicts(conn, branch=branch))
        _assert_no_scan_of_big_tables(found)
        assert any(
            step.startswith("SEARCH verdicts USING INTEGER PRIMARY KEY") for plan in found for step in plan
        )

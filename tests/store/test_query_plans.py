"""SQLite reads the history and the latest verdicts through indexes: no query of a series' points (the API's
or the pages', one reader in series_reads), a case's verdicts or the latest verdicts scans the results or
verdicts tables (what keeps pages fast at 10M)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest
from sqlalchemy import Connection, event, select

from tests.uploads import bundle_of, tiny_run
from tewatch.ingest.service import ingest_bundle
from tewatch.store.engine.database import make_engine
from tewatch.store.engine.migrate import upgrade
from tewatch.store.reads import queries, series_reads
from tewatch.store.schema.models import Series

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


def _uses(found: list[list[str]], table: str, index: str, on: str = "") -> bool:
    return any(
        step.startswith(f"SEARCH {table} USING") and f"INDEX {index} ({on}" in step
        for plan in found
        for step in plan
    )


def _first_series(conn: Connection) -> series_reads.SeriesHeader:
    header = series_reads.series_header(conn, conn.scalar(select(Series.id).order_by(Series.id).limit(1)))
    assert header is not None
    return header


# every way a series' points are read (series_reads), with whether it reads a tail
SERIES_READS: dict[str, tuple[Callable[[Connection, series_reads.SeriesHeader], object], bool]] = {
    "the API's answer": (lambda conn, h: queries.get_series(conn, h.series_id), True),
    # the store holds no pull request: the tail is empty, and no row is looked up after it
    "the API's answer of a pull request, without samples": (
        lambda conn, h: queries.get_series(conn, h.series_id, pr=1, with_samples=False),
        False,
    ),
    "a chart's tail": (lambda conn, h: series_reads.series_points(conn, h, "main", last=30), True),
    "a chart's whole history": (lambda conn, h: series_reads.series_points(conn, h), False),
}


@pytest.mark.parametrize("read, tail", SERIES_READS.values(), ids=list(SERIES_READS))
def test_a_series_is_read_from_the_series_points_index(store, read, tail):
    with store.connect() as conn:
        header = _first_series(conn)
        found = plans(conn, lambda: read(conn, header))
        _assert_no_scan_of_big_tables(found)
        assert _uses(found, "results", "ix_results_series_points", "series_id=?)")
        # a tail's rows are looked up by run id in the same index
        assert _uses(found, "results", "ix_results_series_points", "series_id=? AND run_id=?)") == tail


def test_the_pages_read_a_series_tail_and_its_case_verdicts_from_indexes(store):
    with store.connect() as conn:
        header = _first_series(conn)
        found = plans(
            conn, lambda: series_reads.series_points(conn, header, "main", last=30, with_samples=False)
        )
        _assert_no_scan_of_big_tables(found)
        assert _uses(found, "results", "ix_results_series_points", "series_id=? AND run_id=?)")
        assert _uses(found, "verdicts", "ix_verdicts_case_points")


@pytest.mark.parametrize("branch", [None, "main"])
def test_latest_verdicts_probe_verdicts_by_id(store, branch):
    with store.connect() as conn:
        found = plans(conn, lambda: queries.latest_verdicts(conn, branch=branch))
        _assert_no_scan_of_big_tables(found)
        assert any(
            step.startswith("SEARCH verdicts USING INTEGER PRIMARY KEY") for plan in found for step in plan
        )

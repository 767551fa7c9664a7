"""Engine and session creation for SQLite (embedded default) and PostgreSQL (psycopg 3)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import orjson
from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.orm import Session, sessionmaker

from tewatch.core.settings import normalise_database_url
from tewatch.store.engine import checkpoints, writer_turns

LOCK_WAIT_SECONDS = 30.0  # how long a writer waits for a lock another writer holds (store.contention)
SQLITE_CACHE_KIB = 64 * 1024  # per connection
# Connection execution option: begin the transaction with a write lock (SQLite `BEGIN IMMEDIATE`), so
# concurrent writers queue on the busy timeout instead of failing when a read lock cannot be upgraded.
WRITE_TRANSACTION = "tewatch_write"


def is_sqlite(engine: Engine | Connection) -> bool:
    return engine.dialect.name == "sqlite"


def json_text(value) -> str:
    """How JSON columns are written (orjson: samples above all dominate insert cost)."""
    return orjson.dumps(value).decode("utf-8")


def make_engine(
    url: str, lock_wait_seconds: float = LOCK_WAIT_SECONDS, connections: int | None = None, **kwargs
) -> Engine:
    """An engine whose writers wait at most `lock_wait_seconds` for a lock (SQLite's write lock, a
    PostgreSQL row or table lock); past it the statement fails with what store.contention calls busy.
    A checkout waits as long for one of at most `connections` (default: SQLAlchemy's 15) to be free."""
    url = normalise_database_url(url)
    kwargs.setdefault("pool_timeout", lock_wait_seconds)
    if connections is not None:
        kwargs.setdefault("pool_size", min(5, connections))
        kwargs.setdefault("max_overflow", connections - kwargs["pool_size"])
    kwargs.setdefault("json_serializer", json_text)
    kwargs.setdefault("json_deserializer", orjson.loads)
    wait_ms = max(int(lock_wait_seconds * 1000), 1)
    if url.startswith("sqlite"):
        engine = create_engine(
            url, connect_args={"timeout": wait_ms / 1000, "check_same_thread": False}, **kwargs
        )
        _configure_sqlite(engine, wait_ms)
        return engine
    return create_engine(
        url, pool_pre_ping=True, connect_args={"options": f"-c lock_timeout={wait_ms}"}, **kwargs
    )


def _configure_sqlite(engine: Engine, busy_timeout_ms: int) -> None:
    database = engine.url.database or ""
    # a file named by its path: a thread of the process checkpoints it after each writer (store.checkpoints)
    background_checkpoints = bool(database) and database != ":memory:" and not database.startswith("file:")

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection, _record) -> None:
        # Let SQLAlchemy, not the driver, emit BEGIN (pysqlite's implicit transactions defeat BEGIN IMMEDIATE).
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute(f"PRAGMA busy_timeout={busy_timeout_ms}")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA synchronous=NORMAL")
        # The default 2 MB page cache makes every upload re-read the results indexes from the OS once
        # the store passes a few hundred thousand results; 64 MB keeps their hot pages (ingest ~10% faster
        # near 1M results).
        cursor.execute(f"PRAGMA cache_size=-{SQLITE_CACHE_KIB}")
        if background_checkpoints:  # SQLite's own checkpoint only for a WAL the thread falls behind on
            cursor.execute(f"PRAGMA wal_autocheckpoint={checkpoints.BACKSTOP_PAGES}")
        cursor.close()

    writer_turns.install(engine)
    if background_checkpoints:
        checkpoints.install(engine, database)

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        if conn.get_execution_options().get(WRITE_TRANSACTION, False):
            writer_turns.begin_immediate(conn, database, busy_timeout_ms)
        else:
            conn.exec_driver_sql("BEGIN")


def session_factory(engine: Engine) -> sessionmaker[Session]:
    return sessionmaker(engine, expire_on_commit=False)


@contextmanager
def write_session(engine: Engine) -> Iterator[Session]:
    """One write transaction through the ORM (SQLite: BEGIN IMMEDIATE): committed on success, rolled back
    on any exception. Every writer takes its lock this way: a deferred SQLite transaction that read
    before it writes fails at once ("database is locked") when another writer committed in between."""
    with session_factory(engine)() as session, session.begin():
        session.connection(execution_options={WRITE_TRANSACTION: True})
        yield session


@contextmanager
def write_connection(engine: Engine) -> Iterator[Connection]:
    """One all-or-nothing write transaction; commits on success, rolls back on any exception."""
    with engine.connect() as conn:
        conn = conn.execution_options(**{WRITE_TRANSACTION: True})
        with conn.begin():
            yield conn

"""Writers of one process take turns at a SQLite file before they ask SQLite for its write lock.

SQLite's busy handler polls, sleeping longer the longer a writer has waited (up to 100 ms between tries),
so under many writers a newcomer keeps winning against a writer that has waited for seconds. Threads of
one process (the service's requests, detection, the webhook worker) queue on a lock of their own
instead, woken as soon as the writer before them ends; SQLite's busy timeout still orders this process
against other processes (`tewatch detect`, a second service). A writer that waits its whole lock wait
for its turn asks SQLite once without waiting, so that it fails as any busy writer does.
"""

from __future__ import annotations

import os
import threading

from sqlalchemy import Connection, Engine, event

_TURNS: dict[str, threading.Lock] = {}  # database file -> its writers' turn in this process
_TURNS_GUARD = threading.Lock()
_HELD = "tewatch_writer_turn"  # key in a DB-API connection's info while its transaction holds the turn


def _turn_of(database: str) -> threading.Lock:
    with _TURNS_GUARD:
        return _TURNS.setdefault(os.path.realpath(database), threading.Lock())


def turn_taken(database: str) -> bool:
    """Whether a writer of this process holds the file's turn now."""
    return _turn_of(database).locked()


def begin_immediate(conn: Connection, database: str, wait_ms: int) -> None:
    """BEGIN IMMEDIATE once this writer's turn has come (or its lock wait has run out)."""
    turn = _turn_of(database)
    if not turn.acquire(timeout=wait_ms / 1000):
        conn.exec_driver_sql("PRAGMA busy_timeout=0")
        try:
            conn.exec_driver_sql("BEGIN IMMEDIATE")
        finally:
            conn.exec_driver_sql(f"PRAGMA busy_timeout={wait_ms}")
        return
    try:
        conn.exec_driver_sql("BEGIN IMMEDIATE")
    except BaseException:
        turn.release()
        raise
    conn.info[_HELD] = turn


def install(engine: Engine) -> None:
    """End a writer's turn whenever its transaction ends, or its connection goes back to the pool or away."""

    def end_turn(info: dict) -> None:
        turn = info.pop(_HELD, None)
        if turn is not None:
            turn.release()

    @event.listens_for(engine, "commit")
    @event.listens_for(engine, "rollback")
    def _on_end(conn: Connection) -> None:
        end_turn(conn.info)

    @event.listens_for(engine.pool, "checkin")
    @event.listens_for(engine.pool, "invalidate")
    @event.listens_for(engine.pool, "close")
    def _on_release(_dbapi_connection, record, *_args) -> None:
        if record is not None:
            end_turn(record.info)

"""SQLite's write-ahead log is copied back into the database file by a thread of the process, soon after
each transaction that changed rows, instead of by the writer whose commit crossed SQLite's threshold.

An upload rewrites some 15,000 pages (the last leaf page of every series and every case in the history
indexes). With SQLite's default threshold of 1,000 pages the uploader itself checkpointed after every
upload: copied those pages back and synced the file, 100 ms at 1M stored results and over 200 ms at 3M
(the sync of pages scattered over a larger file), all of it on the upload's time. Now a commit only
appends to the WAL, and one thread checkpoints each file (PASSIVE: it neither waits for nor blocks readers
and writers; a writer finds the WAL fully copied back and starts it over). Every connection keeps SQLite's
own checkpoint at BACKSTOP_PAGES, for a WAL the thread does not keep up with.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import urllib.parse

from sqlalchemy import Engine, event

BACKSTOP_PAGES = 32768  # a writer checkpoints itself past this WAL size: 128 MiB, about two uploads
_CHANGES = "tewatch_changes_at_checkout"  # key in a connection record's info: total_changes at checkout

log = logging.getLogger(__name__)
_lock = threading.Condition()
_pending: list[str] = []  # database files waiting for a checkpoint, oldest first
_running = 0  # checkpoints in progress
_thread: threading.Thread | None = None


def install(engine: Engine, database: str) -> None:
    """Ask for a checkpoint of `database` whenever a connection that changed rows goes back to the pool."""

    @event.listens_for(engine.pool, "checkout")
    def _on_checkout(dbapi_connection, record, _proxy) -> None:
        record.info[_CHANGES] = dbapi_connection.total_changes

    @event.listens_for(engine.pool, "checkin")
    def _on_checkin(dbapi_connection, record) -> None:
        before = record.info.pop(_CHANGES, None)
        if dbapi_connection is not None and dbapi_connection.total_changes != before:
            request(database)


def request(database: str) -> None:
    """Checkpoint the file soon, in the background (one request stands for any number made meanwhile)."""
    global _thread
    with _lock:
        if database not in _pending:
            _pending.append(database)
        if _thread is None or not _thread.is_alive():
            _thread = threading.Thread(target=_run, name="tewatch-sqlite-checkpoints", daemon=True)
            _thread.start()
        _lock.notify_all()


def wait_idle(timeout: float = 30.0) -> bool:
    """Wait until no checkpoint is asked for or running; False if `timeout` seconds passed first."""
    with _lock:
        return _lock.wait_for(lambda: not _pending and not _running, timeout)


def _run() -> None:
    global _running
    while True:
        with _lock:
            _lock.wait_for(lambda: bool(_pending))
            database = _pending.pop(0)
            _running += 1
        try:
            checkpoint(database)
        finally:
            with _lock:
                _running -= 1
                _lock.notify_all()


def checkpoint(database: str) -> None:
    """One PASSIVE checkpoint of the file, through a connection of its own; a file gone is left alone."""
    uri = f"file:{urllib.parse.quote(database)}?mode=rw"
    try:
        connection = sqlite3.connect(uri, uri=True, check_same_thread=False)
        try:
            connection.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
        finally:
            connection.close()
    except sqlite3.Error as exc:
        log.debug("no checkpoint of %s: %s", database, exc)

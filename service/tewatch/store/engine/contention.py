"""Which database errors are worth a retry, nothing having been written: "another writer held the lock too
long" (busy) and "the database cannot be reached" (unavailable).

SQLite answers SQLITE_BUSY (or SQLITE_LOCKED) once its busy timeout runs out; PostgreSQL answers
lock_not_available once `lock_timeout` runs out, and deadlock_detected or serialization_failure when it
chose this transaction to give way; SQLAlchemy's pool times out when every connection stayed in use for
as long. In each case the transaction is rolled back whole (or never began).
"""

from __future__ import annotations

import sqlite3

import psycopg
from sqlalchemy.exc import DBAPIError
from sqlalchemy.exc import TimeoutError as PoolTimeout

SQLITE_BUSY, SQLITE_LOCKED = 5, 6
SQLITE_UNAVAILABLE = {
    10: "an I/O error",
    13: "a full disk",
    14: "a file it cannot open",
}  # IOERR, FULL, CANTOPEN
# PostgreSQL's connection_exception class (08...), and the server shutting down or still starting
POSTGRES_GONE = {"57P01": "shutting down", "57P02": "crashed", "57P03": "still starting"}
POSTGRES_BUSY = {
    "55P03": "a lock another writer holds",  # lock_not_available
    "40P01": "a deadlock with another writer",  # deadlock_detected
    "40001": "a conflict with a concurrent writer",  # serialization_failure
}


def busy_reason(exc: BaseException) -> str | None:
    """What the writer waited for, in words, when `exc` says the store was busy; else None."""
    if isinstance(exc, PoolTimeout):
        return "a database connection: every one this service may open is in use"
    if not isinstance(exc, DBAPIError):
        return None
    orig = exc.orig
    sqlstate = getattr(orig, "sqlstate", None)
    if sqlstate in POSTGRES_BUSY:
        return POSTGRES_BUSY[sqlstate]
    code = getattr(orig, "sqlite_errorcode", None)
    if code is not None and code & 0xFF in (SQLITE_BUSY, SQLITE_LOCKED):
        return "the write lock another writer holds"
    return None


def unavailable_reason(exc: BaseException) -> str | None:
    """Why the database could not be used at all (down, restarting, unreachable, its file unreadable),
    in words, when `exc` says so; else None. Raw driver errors count too (PostgreSQL's COPY raises them)."""
    orig: BaseException | None = exc.orig if isinstance(exc, DBAPIError) else exc
    if isinstance(exc, DBAPIError) and exc.connection_invalidated:
        return "the connection to the database broke off"
    if isinstance(orig, psycopg.OperationalError):
        sqlstate = orig.sqlstate
        if sqlstate is None or sqlstate.startswith("08"):
            return "the database server cannot be reached"
        if sqlstate in POSTGRES_GONE:
            return f"the database server is {POSTGRES_GONE[sqlstate]}"
    if isinstance(orig, sqlite3.OperationalError):
        code = getattr(orig, "sqlite_errorcode", 0) & 0xFF
        if code in SQLITE_UNAVAILABLE:
            return f"the database file gave {SQLITE_UNAVAILABLE[code]}"
    return None

"""Which database errors mean "another writer held the lock too long": retryable, nothing was written.

SQLite answers SQLITE_BUSY (or SQLITE_LOCKED) once its busy timeout runs out; PostgreSQL answers
lock_not_available once `lock_timeout` runs out, and deadlock_detected or serialization_failure when it
chose this transaction to give way; SQLAlchemy's pool times out when every connection stayed in use for
as long. In each case the transaction is rolled back whole (or never began).
"""

from __future__ import annotations

from sqlalchemy.exc import DBAPIError
from sqlalchemy.exc import TimeoutError as PoolTimeout

SQLITE_BUSY, SQLITE_LOCKED = 5, 6
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

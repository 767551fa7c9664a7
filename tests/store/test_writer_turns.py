"""Writers of one process take turns at a SQLite file (tewatch.store.engine.writer_turns): each gets its turn
once the one before it ends, however that transaction ended; one that waits its whole lock wait fails as
a busy writer (503 in the API), and every write lands."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from sqlalchemy import make_url, text
from sqlalchemy.exc import DBAPIError

from tewatch.store.engine.contention import busy_reason
from tewatch.store.engine.database import make_engine, write_connection, write_session
from tewatch.store.engine.writer_turns import turn_taken

WAIT_S = 60  # generous: the machine may be busy


@pytest.fixture
def database(tmp_path):
    url = f"sqlite:///{tmp_path / 'turns.sqlite3'}"
    engine = make_engine(url)
    with write_connection(engine) as conn:
        conn.execute(text("CREATE TABLE counter (id INTEGER PRIMARY KEY, n INTEGER NOT NULL)"))
        conn.execute(text("INSERT INTO counter VALUES (1, 0)"))
    yield url, engine
    engine.dispose()


def count(engine) -> int:
    with engine.connect() as conn:
        return conn.execute(text("SELECT n FROM counter WHERE id = 1")).scalar_one()


def increment(engine) -> None:
    with write_connection(engine) as conn:
        n = conn.execute(text("SELECT n FROM counter WHERE id = 1")).scalar_one()
        conn.execute(text("UPDATE counter SET n = :n WHERE id = 1"), {"n": n + 1})


def test_a_writer_whose_turn_never_comes_fails_as_busy(database):
    url, engine = database
    impatient = make_engine(url, lock_wait_seconds=0.5)
    holding, done = threading.Event(), threading.Event()

    def hold() -> None:
        with write_connection(engine):
            holding.set()
            done.wait(WAIT_S)

    with ThreadPoolExecutor(max_workers=1) as pool:
        holder = pool.submit(hold)
        assert holding.wait(WAIT_S)
        try:
            with pytest.raises(DBAPIError) as refused:
                increment(impatient)
        finally:
            done.set()
        holder.result(WAIT_S)
    assert busy_reason(refused.value) is not None
    increment(impatient)  # the holder's turn ended with its transaction
    assert count(engine) == 1
    impatient.dispose()


def test_the_turn_passes_on_after_a_rollback_an_exception_or_a_lost_connection(database):
    url, engine = database
    path = make_url(url).database
    with write_connection(engine):
        assert turn_taken(path)
    assert not turn_taken(path)
    with pytest.raises(RuntimeError), write_connection(engine):
        raise RuntimeError("the writer fails")
    assert not turn_taken(path)
    with pytest.raises(RuntimeError), write_session(engine) as session:
        session.execute(text("UPDATE counter SET n = 100 WHERE id = 1"))
        raise RuntimeError("the writer fails")
    assert not turn_taken(path)
    lost = engine.connect()
    lost.execution_options(tewatch_write=True).begin()
    lost.execute(text("UPDATE counter SET n = 100 WHERE id = 1"))
    lost.invalidate()  # the connection is gone mid-transaction, and its turn with it
    assert not turn_taken(path)
    with engine.connect() as conn:  # closed without commit or rollback: the pool rolls it back
        conn.execution_options(tewatch_write=True).begin()
        conn.execute(text("UPDATE counter SET n = 100 WHERE id = 1"))
    assert not turn_taken(path)
    increment(engine)
    assert count(engine) == 1


def test_many_writers_of_one_process_each_write_once(database):
    _, engine = database
    writers, each = 8, 25
    with ThreadPoolExecutor(max_workers=writers) as pool:
        for future in [pool.submit(lambda: [increment(engine) for _ in range(each)]) for _ in range(writers)]:
            future.result(WAIT_S * 4)
    assert count(engine) == writers * each

"""A SQLite store's WAL is copied back into the database file in the background after each writer."""

from __future__ import annotations

import shutil
import sqlite3

from tests.uploads import bundle_of, tiny_run
from tewatch.ingest.service import ingest_bundle
from tewatch.store.engine import checkpoints
from tewatch.store.engine.database import make_engine
from tewatch.store.engine.migrate import upgrade


def _runs_in_file_alone(path, tmp_path) -> int:
    """Runs the database file holds without its WAL (a copy of the file by itself)."""
    alone = tmp_path / "alone.sqlite3"
    shutil.copy(path, alone)
    connection = sqlite3.connect(alone)
    try:
        return connection.execute("SELECT count(*) FROM runs").fetchone()[0]
    finally:
        connection.close()


def test_an_upload_reaches_the_database_file_soon_after(tmp_path):
    path = tmp_path / "store.sqlite3"
    upgrade(f"sqlite:///{path}")
    engine = make_engine(f"sqlite:///{path}")
    try:
        with engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA wal_autocheckpoint").scalar() == checkpoints.BACKSTOP_PAGES
        assert checkpoints.wait_idle()
        before = _runs_in_file_alone(path, tmp_path)
        ingest_bundle(engine, bundle_of(tiny_run(0), branch="main"))
        assert checkpoints.wait_idle()
        assert _runs_in_file_alone(path, tmp_path) == before + 1
    finally:
        engine.dispose()


def test_readers_ask_for_no_checkpoint(tmp_path, monkeypatch):
    path = tmp_path / "store.sqlite3"
    upgrade(f"sqlite:///{path}")
    engine = make_engine(f"sqlite:///{path}")
    asked: list[str] = []
    monkeypatch.setattr(checkpoints, "request", asked.append)
    try:
        with engine.connect() as conn:
            conn.exec_driver_sql("SELECT count(*) FROM runs").scalar()
        assert asked == []
        ingest_bundle(engine, bundle_of(tiny_run(0), branch="main"))
        assert asked and set(asked) == {str(path)}
    finally:
        engine.dispose()


def test_a_file_gone_is_left_alone(tmp_path):
    gone = tmp_path / "gone.sqlite3"
    checkpoints.request(str(gone))
    assert checkpoints.wait_idle()
    assert not gone.exists()

"""The latest-verdict tables agree with the verdicts themselves, whatever order runs arrive in."""

from __future__ import annotations

from sqlalchemy import text

from tests.uploads import bundle_of, tiny_run
from tewatch.ingest.latest import update_latest_verdicts
from tewatch.ingest.service import ingest_bundle
from tewatch.store.engine.database import make_engine, write_connection
from tewatch.store.reads import queries

# the verdict of every case at its newest commit (commit date, run start, run id), straight from the verdicts:
# what the tables must always say
NEWEST = """
SELECT case_id, run_id, status FROM (
  SELECT v.case_id, v.run_id, v.status, ROW_NUMBER() OVER (
    PARTITION BY v.case_id
    ORDER BY c.committed_at DESC, COALESCE(r.started_at, r.uploaded_at) DESC, v.run_id DESC) AS place
  FROM verdicts v JOIN runs r ON r.id = v.run_id JOIN commits c ON c.id = r.commit_id
  WHERE CAST(:branch AS VARCHAR) IS NULL OR r.branch = :branch
) ranked WHERE place = 1
ORDER BY case_id
"""


def _expected(conn, branch: str | None) -> list[tuple]:
    return [tuple(row) for row in conn.execute(text(NEWEST), {"branch": branch})]


def _answered(conn, branch: str | None) -> list[tuple]:
    rows = queries.latest_verdicts(conn, branch=branch)
    return sorted((r["case_id"], r["run_id"], r["status"]) for r in rows)


def test_latest_follows_every_upload_on_every_branch(db_url):
    engine = make_engine(db_url)
    uploads = [
        ("main", 0),
        ("feature", 1),
        ("main", 1),
        (None, 0),
        ("feature", 0),
    ]
    try:
        for branch, index in uploads:
            ingest_bundle(engine, bundle_of(tiny_run(index), branch=branch, repo="acme/te"))
            with engine.connect() as conn:
                for scope in (None, "main", "feature"):
                    assert _answered(conn, scope) == _expected(conn, scope), (branch, index, scope)
        with engine.connect() as conn:
            assert queries.latest_verdicts(conn, branch="no-such-branch") == []
            assert {r["branch"] for r in queries.latest_verdicts(conn, branch="main")} == {"main"}
    finally:
        engine.dispose()


def test_an_older_run_written_late_does_not_replace_a_newer_one(db_url):
    """Two PostgreSQL transactions may commit out of run-id order: the newer commit's run stays."""
    engine = make_engine(db_url)
    try:
        older = ingest_bundle(engine, bundle_of(tiny_run(0), branch="main")).run_id
        newer = ingest_bundle(engine, bundle_of(tiny_run(1), branch="main")).run_id
        with write_connection(engine) as conn:
            update_latest_verdicts(conn, older, "main")
        with engine.connect() as conn:
            for scope in (None, "main"):
                assert {r["run_id"] for r in queries.latest_verdicts(conn, branch=scope)} == {newer}
    finally:
        engine.dispose()


def test_filters_combine_with_the_latest_table(db_url):
    engine = make_engine(db_url)
    try:
        ingest_bundle(engine, bundle_of(tiny_run(0), branch="main"))
        with engine.connect() as conn:
            everything = queries.latest_verdicts(conn)
            errors = queries.latest_verdicts(conn, status="error", branch="main")
            te = queries.latest_verdicts(conn, backend="te")
        assert [r["case_name"] for r in everything] == sorted(r["case_name"] for r in everything)
        assert errors and {r["status"] for r in errors} == {"error"}
        assert te and {r["backend"] for r in te} == {"te"}
        assert len(errors) == sum(r["status"] == "error" for r in everything)
    finally:
        engine.dispose()


def test_a_backfilled_older_commit_leaves_the_newest_commit_latest(db_url):
    from datetime import UTC, datetime

    engine = make_engine(db_url)
    try:
        newest = ingest_bundle(
            engine, bundle_of(tiny_run(0), branch="main", commit_date=datetime(2026, 11, 30, tzinfo=UTC))
        ).run_id
        ingest_bundle(
            engine, bundle_of(tiny_run(1), branch="main", commit_date=datetime(2024, 1, 1, tzinfo=UTC))
        )
        with engine.connect() as conn:
            for scope in (None, "main"):
                assert {r["run_id"] for r in queries.latest_verdicts(conn, branch=scope)} == {newest}
                assert _answered(conn, scope) == _expected(conn, scope)
    finally:
        engine.dispose()

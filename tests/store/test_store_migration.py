"""Revision 0003 on a store with history: down to the old layout and back up loses and changes nothing."""

from __future__ import annotations

import hashlib

from sqlalchemy import inspect, text

from tests.uploads import bundle_of, tiny_run
from tewatch.ingest.reparse import stored_bundles
from tewatch.ingest.service import ingest_bundle
from tewatch.store.engine.database import make_engine
from tewatch.store.engine.migrate import current_revision, downgrade, upgrade
from tewatch.store.reads import queries

BEFORE = "0002_detection_alerts"


def _load_history(engine) -> dict[int, str]:
    """run id -> upload digest, for runs on two branches and one without a branch."""
    uploads = [
        bundle_of(tiny_run(0), branch="main", repo="acme/te"),
        bundle_of(tiny_run(1), branch="main", repo="acme/te"),
        bundle_of(tiny_run(0), branch="feature", repo="acme/te"),
        bundle_of(tiny_run(1), repo="acme/te"),
    ]
    return {ingest_bundle(engine, b).run_id: b.digest() for b in uploads}


def _snapshot(engine) -> dict:
    with engine.connect() as conn:
        run_ids = [row[0] for row in conn.execute(text("SELECT id FROM runs ORDER BY id"))]
        return {
            "latest": conn.execute(
                text("SELECT case_id, run_id, verdict_id FROM latest_verdicts ORDER BY case_id")
            ).all(),
            "latest_branch": conn.execute(
                text("SELECT branch, case_id, run_id, verdict_id FROM latest_branch_verdicts ORDER BY 1, 2")
            ).all(),
            "files": {run_id: queries.run_files(conn, run_id) for run_id in run_ids},
            "verdicts": {branch: queries.latest_verdicts(conn, branch=branch) for branch in (None, "main")},
        }


def _unreferenced_raw_files(engine) -> int:
    with engine.connect() as conn:
        return conn.execute(
            text("SELECT count(*) FROM raw_files WHERE digest NOT IN (SELECT digest FROM run_files)")
        ).scalar_one()


def test_down_to_per_case_files_and_back_up(db_url):
    engine = make_engine(db_url)
    try:
        digests = _load_history(engine)
        before = _snapshot(engine)
        assert len(before["latest"]) == 8 and {r.branch for r in before["latest_branch"]} == {
            "main",
            "feature",
        }

        engine.dispose()
        downgrade(db_url, BEFORE)
        with engine.connect() as conn:
            assert current_revision(engine) == BEFORE
            assert not inspect(conn).has_table("latest_verdicts")
            stored = conn.execute(
                text("SELECT rf.run_id, rf.role, rf.digest, rw.content FROM run_files rf"
                     " JOIN raw_files rw ON rw.digest = rf.digest")
            ).all()  # fmt: skip
        roles = {(r.run_id, r.role) for r in stored}
        assert not any(role == "cases" for _, role in roles)
        for run_id, files in before["files"].items():
            assert {(run_id, f["role"]) for f in files} <= roles  # one row per case file again
        assert all(hashlib.sha256(bytes(r.content)).hexdigest() == r.digest for r in stored)
        assert _unreferenced_raw_files(engine) == 0

        engine.dispose()
        upgrade(db_url)
        assert _snapshot(engine) == before
        assert _unreferenced_raw_files(engine) == 0
        assert {run_id: bundle.digest() for run_id, bundle in stored_bundles(engine)} == digests
    finally:
        engine.dispose()

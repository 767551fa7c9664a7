"""Ingest one upload: parse and validate everything first, then write it all in one transaction."""

from __future__ import annotations

from sqlalchemy import Engine

from tewatch.ingest.bounds import UploadBounds
from tewatch.ingest.bundle import UploadBundle
from tewatch.ingest.plan import build_plan
from tewatch.ingest.storable import check_plan
from tewatch.ingest.writer import AlreadyStored, StoredRun, existing_run, store_plan
from tewatch.store.engine.database import write_connection
from tewatch.store.engine.gc_pause import collector_paused


def ingest_bundle(engine: Engine, bundle: UploadBundle, bounds: UploadBounds | None = None) -> StoredRun:
    """Store the upload, or answer with the run an identical earlier upload created.

    Raises IngestError (nothing written) when any file is malformed, breaks the contract or would create
    more than `bounds` (default: UploadBounds()).
    """
    digest = bundle.digest()
    with engine.connect() as conn:
        found = existing_run(conn, digest)
    if found:
        return StoredRun(found[0], False, digest, found[1])
    try:
        with collector_paused():
            plan = build_plan(bundle, bounds or UploadBounds())
            check_plan(plan)
            with write_connection(engine) as conn:
                return store_plan(conn, plan)
    except AlreadyStored as stored:
        with engine.connect() as conn:
            found = existing_run(conn, digest)
        return StoredRun(stored.run_id, False, digest, found[1] if found else {})

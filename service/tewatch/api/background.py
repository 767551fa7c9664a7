"""The app's work beside its requests: the delivery worker for as long as the app runs, and detection
after a stored upload."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

from fastapi import FastAPI
from sqlalchemy import Engine

from tewatch.core.settings import Settings
from tewatch.store.engine.contention import unavailable_reason
from tewatch.worker.outbox import outbox_worker, sync_github

log = logging.getLogger(__name__)


@contextmanager
def delivery_worker(app: FastAPI) -> Iterator[None]:
    """Deliver webhooks from a background thread for as long as the app runs (if settings allow)."""
    settings: Settings = app.state.settings
    worker = None
    sync_github(app.state.engine, settings)
    if settings.webhook_worker:
        worker = outbox_worker(app.state.engine, settings)
        worker.start()
    app.state.webhook_worker = worker
    try:
        yield
    finally:
        if worker is not None:
            worker.stop()


def detect_after_upload_task(app: FastAPI, run_id: int) -> None:
    """Background task after a stored upload: detection, then wake the delivery worker."""
    from tewatch.pipeline.detection import detect_after_upload

    settings: Settings = app.state.settings
    engine: Engine = app.state.engine
    try:
        summary = detect_after_upload(engine, run_id, settings.public_url)
    except Exception as exc:
        reason = unavailable_reason(exc)
        if reason is None:
            log.exception("detection after upload of run %d failed; `tewatch detect` will pick it up", run_id)
        else:
            log.warning("detection after upload of run %d waits for `tewatch detect`: %s", run_id, reason)
        return
    worker = getattr(app.state, "webhook_worker", None)
    if worker is not None and summary.events:
        worker.wake()

"""How the service runs detection and delivery: the worker in the app lifespan, detection after uploads."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

from fastapi import FastAPI
from sqlalchemy import Engine

from tewatch.alerts.delivery import DeliveryPolicy, OutboxWorker
from tewatch.core.settings import Settings

log = logging.getLogger(__name__)


def delivery_policy(settings: Settings) -> DeliveryPolicy:
    # one GitHub delivery makes up to six requests (token, comments, create or update, statuses)
    requests = 6 if settings.github_repository else 3
    return DeliveryPolicy(
        timeout_seconds=settings.webhook_timeout_seconds,
        max_attempts=settings.webhook_max_attempts,
        backoff_seconds=settings.webhook_backoff_seconds,
        backoff_max_seconds=settings.webhook_backoff_max_seconds,
        poll_seconds=settings.webhook_poll_seconds,
        # a claimed delivery whose worker died is retried once its lease ends: well after any live POST
        lease_seconds=requests * settings.webhook_timeout_seconds + 1,
    )


def outbox_worker(engine: Engine, settings: Settings) -> OutboxWorker:
    """A worker for webhooks and, where the settings configure it, for GitHub."""
    from tewatch.core.github_config import github_config

    config = github_config(settings)
    publisher = None
    if config is not None:
        from tewatch.github.publisher import GitHubPublisher

        publisher = GitHubPublisher(config, settings.webhook_timeout_seconds)
    return OutboxWorker(engine, delivery_policy(settings), github=publisher)


def sync_github(engine: Engine, settings: Settings) -> None:
    """The GitHub subscription follows the settings of the service that starts last."""
    from tewatch.core.github_config import github_config
    from tewatch.github.subscription import sync_github_subscription
    from tewatch.store.database import write_session

    with write_session(engine) as session:
        sync_github_subscription(session, github_config(settings))


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
    except Exception:
        log.exception("detection after upload of run %d failed; `tewatch detect` will pick it up", run_id)
        return
    worker = getattr(app.state, "webhook_worker", None)
    if worker is not None and summary.events:
        worker.wake()

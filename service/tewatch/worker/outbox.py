"""The outbox worker assembled from the settings: its delivery policy, and the GitHub publisher and
subscription where TEWATCH_GITHUB_* configure them."""

from __future__ import annotations

from sqlalchemy import Engine

from tewatch.alerts.delivery import DeliveryPolicy, OutboxWorker
from tewatch.core.settings import Settings


def delivery_policy(settings: Settings) -> DeliveryPolicy:
    # one GitHub delivery makes up to six requests (token, comments, create or update, statuses)
    requests = 6 if settings.github_repository else 3
    return DeliveryPolicy(
        timeout_seconds=settings.webhook_timeout_seconds,
        deadline_seconds=settings.webhook_deadline_seconds,
        parallel=settings.webhook_parallel,
        allow_loopback=settings.webhook_allow_loopback,
        max_attempts=settings.webhook_max_attempts,
        backoff_seconds=settings.webhook_backoff_seconds,
        backoff_max_seconds=settings.webhook_backoff_max_seconds,
        poll_seconds=settings.webhook_poll_seconds,
        # a claimed delivery whose worker died is retried once its lease ends: well after any live POST
        lease_seconds=max(requests * settings.webhook_timeout_seconds, settings.webhook_deadline_seconds) + 1,
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
    from tewatch.store.engine.database import write_session

    with write_session(engine) as session:
        sync_github_subscription(session, github_config(settings))

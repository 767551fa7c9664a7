"""The outbox's GitHub subscription, kept in step with the configuration: one active subscription to
`pr.report` and `bisection.finished` for the configured repository, none while the integration is off."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from tewatch.alerts.events import EventType
from tewatch.core.github_config import GitHubConfig
from tewatch.store.schema.alert_models import SubscriptionKind, WebhookSubscription

EVENT_TYPES = [EventType.pr_report.value, EventType.bisection_finished.value]


def sync_github_subscription(session: Session, config: GitHubConfig | None) -> WebhookSubscription | None:
    """Deactivate GitHub subscriptions of another (or no) repository; add this one's if missing."""
    active = session.scalars(
        select(WebhookSubscription).where(
            WebhookSubscription.kind == SubscriptionKind.github, WebhookSubscription.active.is_(True)
        )
    ).all()
    kept = None
    for subscription in active:
        if config is not None and kept is None and subscription.url == config.target:
            kept = subscription
            kept.event_types = list(EVENT_TYPES)
        else:
            subscription.active = False
            subscription.removed_at = datetime.now(UTC)
    if config is not None and kept is None:
        kept = WebhookSubscription(
            kind=SubscriptionKind.github,
            url=config.target,
            secret="",
            event_types=list(EVENT_TYPES),
            description=f"GitHub pull requests of {config.repository}",
        )
        session.add(kept)
        session.flush()
    return kept

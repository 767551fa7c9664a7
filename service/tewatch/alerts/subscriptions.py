"""Webhook subscriptions: a URL, a shared secret and the event types it wants."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from urllib.parse import urlsplit

import httpx
from sqlalchemy import select
from sqlalchemy.orm import Session

from tewatch.alerts.destinations import RefusedDestination, check_subscription_host
from tewatch.alerts.events import EVENT_TYPES
from tewatch.store.schema.alert_models import WebhookSubscription

MIN_SECRET_LENGTH = 16


class SubscriptionError(ValueError):
    pass


def validate(url: str, secret: str, event_types: Iterable[str], allow_loopback: bool = False) -> list[str]:
    validate_url(url, allow_loopback)
    if len(secret) < MIN_SECRET_LENGTH:
        raise SubscriptionError(f"the secret must be at least {MIN_SECRET_LENGTH} characters")
    if "\x00" in secret:
        raise SubscriptionError("the secret must not contain a NUL character")
    types = sorted(set(event_types))
    unknown = [t for t in types if t not in EVENT_TYPES]
    if unknown or not types:
        raise SubscriptionError(
            f"event types must be among {', '.join(EVENT_TYPES)}; got {', '.join(unknown) or 'none'}"
        )
    return types


def validate_url(url: str, allow_loopback: bool = False) -> None:
    """A URL the webhook client can send to: http(s), a host, a valid port, no whitespace or control
    characters (a CR or LF would otherwise only fail at send time), one httpx itself parses, and a host
    that is not, nor now resolves to, an internal address (tewatch.alerts.destinations)."""
    bad = next((c for c in url if c.isspace() or ord(c) < 0x20 or ord(c) == 0x7F), None)
    if bad is not None:
        raise SubscriptionError(f"webhook URL must not contain whitespace or control characters ({bad!r})")
    try:
        parts = urlsplit(url)
        port = parts.port  # urlsplit checks the range
        host = httpx.URL(url).host
    except (httpx.InvalidURL, ValueError) as exc:  # an invalid IDNA host is a UnicodeError, a ValueError
        raise SubscriptionError(f"webhook URL is not valid ({exc}): {url!r}") from None
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise SubscriptionError(f"webhook URL must be http(s)://host/...: {url!r}")
    if not host or port == 0:
        raise SubscriptionError(f"webhook URL must name a host (and a port from 1 to 65535): {url!r}")
    try:
        check_subscription_host(host, port or (443 if parts.scheme == "https" else 80), allow_loopback)
    except RefusedDestination as exc:
        raise SubscriptionError(f"webhooks are not sent to internal addresses: {exc}") from None


def add_subscription(
    session: Session,
    url: str,
    secret: str,
    event_types: Iterable[str],
    description: str = "",
    *,
    allow_loopback: bool = False,
) -> WebhookSubscription:
    types = validate(url, secret, event_types, allow_loopback)
    if "\x00" in description:
        raise SubscriptionError("the description must not contain a NUL character")
    subscription = WebhookSubscription(url=url, secret=secret, event_types=types, description=description)
    session.add(subscription)
    session.flush()
    return subscription


def active_subscriptions(session: Session) -> list[WebhookSubscription]:
    query = (
        select(WebhookSubscription)
        .where(WebhookSubscription.active.is_(True))
        .order_by(WebhookSubscription.id)
    )
    return list(session.scalars(query))


def remove_subscription(session: Session, subscription_id: int) -> WebhookSubscription:
    """Stops new deliveries; the delivery log is kept."""
    subscription = session.get(WebhookSubscription, subscription_id)
    if subscription is None or not subscription.active:
        raise SubscriptionError(f"no active webhook subscription {subscription_id}")
    subscription.active = False
    subscription.removed_at = datetime.now(UTC)
    return subscription

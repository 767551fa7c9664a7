"""`tewatch webhooks`: subscriptions (add, list, remove) and delivering the outbox (`deliver`)."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from tewatch.cli.app import app
from tewatch.cli.options import DatabaseOption, fail, migrated_engine, settings_for

webhooks_app = typer.Typer(help="Signed webhooks: subscriptions and delivery.", no_args_is_help=True)
app.add_typer(webhooks_app, name="webhooks")


@webhooks_app.command("add")
def add(
    url: str = typer.Argument(..., help="receiver URL (http or https)"),
    secret: str = typer.Option(
        ..., "--secret", help="shared secret that signs every body (>= 16 characters)"
    ),
    events: Annotated[
        list[str] | None,
        typer.Option("--events", "-e", help="event types, repeated or comma-separated (default: all)"),
    ] = None,
    description: str = typer.Option("", "--description"),
    db: DatabaseOption = None,
) -> None:
    """Subscribe URL to event types."""
    from tewatch.alerts.events import EVENT_TYPES
    from tewatch.alerts.subscriptions import SubscriptionError, add_subscription
    from tewatch.store.engine.database import write_session

    types = [t.strip() for item in events or EVENT_TYPES for t in item.split(",") if t.strip()]
    allow_loopback = settings_for(db).webhook_allow_loopback
    with write_session(migrated_engine(db)) as session:
        try:
            subscription = add_subscription(
                session, url, secret, types, description, allow_loopback=allow_loopback
            )
        except SubscriptionError as exc:
            raise fail(str(exc)) from exc
        typer.echo(f"subscription {subscription.id}: {url} <- {', '.join(subscription.event_types)}")


@webhooks_app.command("list")
def list_command(db: DatabaseOption = None) -> None:
    """Active subscriptions with their delivery counts."""
    from sqlalchemy import func, select
    from sqlalchemy.orm import Session

    from tewatch.alerts.subscriptions import active_subscriptions
    from tewatch.store.schema.alert_models import WebhookDelivery

    table = Table("id", "kind", "url", "events", "pending", "delivered", "failed")
    with Session(migrated_engine(db)) as session:
        counts = {
            (sid, status.value): n
            for sid, status, n in session.execute(
                select(WebhookDelivery.subscription_id, WebhookDelivery.status, func.count()).group_by(
                    WebhookDelivery.subscription_id, WebhookDelivery.status
                )
            )
        }
        for s in active_subscriptions(session):
            table.add_row(
                str(s.id),
                s.kind.value,
                s.url,
                ", ".join(s.event_types),
                *(str(counts.get((s.id, k), 0)) for k in ("pending", "delivered", "failed")),
            )
    Console().print(table)


@webhooks_app.command("remove")
def remove(subscription_id: int = typer.Argument(...), db: DatabaseOption = None) -> None:
    """Stop deliveries to a subscription (its delivery log stays)."""
    from tewatch.alerts.subscriptions import SubscriptionError, remove_subscription
    from tewatch.store.engine.database import write_session

    with write_session(migrated_engine(db)) as session:
        try:
            remove_subscription(session, subscription_id)
        except SubscriptionError as exc:
            raise fail(str(exc)) from exc
    typer.echo(f"removed subscription {subscription_id}")


@webhooks_app.command("deliver")
def deliver(
    follow: bool = typer.Option(False, "--follow", help="keep delivering until interrupted"),
    db: DatabaseOption = None,
) -> None:
    """Send every due delivery now (retries included), or keep doing so with --follow. GitHub deliveries
    are sent where TEWATCH_GITHUB_* configure the integration, and wait otherwise."""
    import time

    from tewatch.worker.outbox import outbox_worker

    settings = settings_for(db)
    worker = outbox_worker(migrated_engine(db), settings)
    delivered = failed = 0
    try:
        while True:
            ok, bad = worker.run_once()
            delivered, failed = delivered + ok, failed + bad
            if not follow and not (ok or bad):
                break
            if not (ok or bad):
                time.sleep(settings.webhook_poll_seconds)
    except KeyboardInterrupt:
        pass
    finally:
        worker.close()
    typer.echo(f"delivered {delivered}, failed attempts {failed} (failed ones are retried with backoff)")

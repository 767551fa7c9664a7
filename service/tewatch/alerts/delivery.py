"""The outbox worker: claims due deliveries with a lease, POSTs them signed (or, for the GitHub
subscription, hands them to tewatch.github), logs every attempt, retries with exponential backoff (or
after the wait the far side asked for, when longer), and gives up (status `failed`) after the last
attempt or an answer no retry can change.

Delivery is at least once: a crash between the receiver's 2xx and the database update sends the same
delivery again after its lease runs out, with the same X-Tewatch-Delivery id, so receivers deduplicate on
it. Several workers (the service and `tewatch webhooks deliver`) may run against one database: a
delivery's lease is taken by one conditional UPDATE, so only one of them sends it at a time.
"""

from __future__ import annotations

import logging
import random
import threading
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Protocol

import httpx
from sqlalchemy import Engine, or_, select, update
from sqlalchemy.orm import Session, sessionmaker

from tewatch.alerts.outcome import Outcome
from tewatch.alerts.signing import DELIVERY_HEADER, EVENT_HEADER, SIGNATURE_HEADER, sign
from tewatch.store.alert_models import (
    DeliveryStatus,
    SubscriptionKind,
    WebhookAttempt,
    WebhookDelivery,
    WebhookSubscription,
)
from tewatch.store.database import WRITE_TRANSACTION, session_factory


class Publisher(Protocol):
    """Sends a GitHub delivery's body (tewatch.github.publisher.GitHubPublisher does)."""

    def publish(self, body: bytes | str) -> Outcome: ...


log = logging.getLogger(__name__)

RESPONSE_HEAD_CHARS = 500
UNSENDABLE = "unsendable URL: "  # how the error of an attempt that could not even start begins


@dataclass(frozen=True)
class DeliveryPolicy:
    timeout_seconds: float = 10.0
    max_attempts: int = 10
    backoff_seconds: float = 5.0
    backoff_max_seconds: float = 3600.0
    lease_seconds: float = 60.0
    batch: int = 20
    poll_seconds: float = 1.0

    def delay(self, attempts: int, asked: float | None = None) -> float:
        """Wait before the next attempt: doubling from backoff_seconds, capped, with +-20 % jitter; never
        less than the wait the far side asked for (Retry-After)."""
        base = min(self.backoff_seconds * 2 ** max(attempts - 1, 0), self.backoff_max_seconds)
        return max(base * random.uniform(0.8, 1.2), asked or 0.0)


def _now() -> datetime:
    return datetime.now(UTC)


def _write(session: Session) -> None:
    """Start the session's transaction as a writer (SQLite: BEGIN IMMEDIATE)."""
    session.connection(execution_options={WRITE_TRANSACTION: True})


@dataclass(frozen=True)
class _Outgoing:
    delivery_id: str
    attempts: int
    url: str
    secret: str
    event_type: str
    body: bytes
    active: bool
    kind: SubscriptionKind


def _hopeless(outcome: Outcome) -> bool:
    """An attempt no retry can turn into a delivery."""
    error = outcome.error or ""
    return outcome.final or error == "subscription removed" or error.startswith(UNSENDABLE)


class OutboxWorker:
    def __init__(
        self,
        engine: Engine,
        policy: DeliveryPolicy | None = None,
        client: httpx.Client | None = None,
        github: Publisher | None = None,
    ):
        self.sessions: sessionmaker[Session] = session_factory(engine)
        self.policy = policy or DeliveryPolicy()
        self.client = client or httpx.Client(timeout=self.policy.timeout_seconds, follow_redirects=False)
        self.github = github
        # a worker claims only what it can send: the GitHub subscription's deliveries wait for a worker
        # configured for GitHub
        self.kinds = [SubscriptionKind.webhook, *([SubscriptionKind.github] if github else [])]
        self.owner = uuid.uuid4().hex
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # one pass -------------------------------------------------------------------------------------------
    def claim(self) -> list[str]:
        now = _now()
        token = f"{self.owner}:{uuid.uuid4().hex[:8]}"
        claimable = (
            (WebhookDelivery.status == DeliveryStatus.pending)
            & (WebhookDelivery.next_attempt_at <= now)
            & or_(WebhookDelivery.lease_until.is_(None), WebhookDelivery.lease_until < now)
        )
        due = (
            select(WebhookDelivery.id)
            .join(WebhookSubscription)
            .where(claimable, WebhookSubscription.kind.in_(self.kinds))
            .order_by(WebhookDelivery.next_attempt_at)
        )
        due_ids = due.limit(self.policy.batch).scalar_subquery()
        with self.sessions() as session, session.begin():
            _write(session)
            session.execute(
                update(WebhookDelivery)
                .where(WebhookDelivery.id.in_(due_ids), claimable)
                .values(lease_until=now + timedelta(seconds=self.policy.lease_seconds), lease_owner=token)
                .execution_options(synchronize_session=False)
            )
        with self.sessions() as session:
            return list(
                session.scalars(select(WebhookDelivery.id).where(WebhookDelivery.lease_owner == token))
            )

    def _load(self, delivery_id: str) -> _Outgoing:
        with self.sessions() as session:
            delivery = session.get(WebhookDelivery, delivery_id)
            assert delivery is not None
            return _Outgoing(
                delivery_id=delivery.id,
                attempts=delivery.attempts,
                url=delivery.subscription.url,
                secret=delivery.subscription.secret,
                event_type=delivery.event.type,
                body=delivery.event.body.encode(),
                active=delivery.subscription.active,
                kind=delivery.subscription.kind,
            )

    def send(self, delivery_id: str) -> bool:
        """Send one claimed delivery and record the outcome; True when the receiver took it."""
        out = self._load(delivery_id)
        started, clock = _now(), time.perf_counter()
        if not out.active:
            outcome = Outcome(error="subscription removed")
        elif out.kind is SubscriptionKind.github:
            assert self.github is not None  # claim() takes GitHub deliveries only with a publisher
            outcome = self.github.publish(out.body)
        else:
            outcome = self._post(out)
        self._record(out, started, (time.perf_counter() - clock) * 1000, outcome)
        return outcome.ok

    def _post(self, out: _Outgoing) -> Outcome:
        headers = {
            "Content-Type": "application/json",
            "User-Agent": "tewatch-webhooks/1",
            EVENT_HEADER: out.event_type,
            DELIVERY_HEADER: out.delivery_id,
            SIGNATURE_HEADER: sign(out.secret, out.body),
        }
        try:
            response = self.client.post(out.url, content=out.body, headers=headers)
        except httpx.HTTPError as exc:
            return Outcome(error=f"{type(exc).__name__}: {exc}"[:1000])
        except (httpx.InvalidURL, ValueError) as exc:  # a URL no request can go to (IDNA: ValueError)
            return Outcome(error=f"{UNSENDABLE}{type(exc).__name__}: {exc}"[:1000])
        status_code, head = response.status_code, response.text[:RESPONSE_HEAD_CHARS]
        error = None if 200 <= status_code < 300 else f"HTTP {status_code}"
        return Outcome(status_code, error, head)

    def _record(self, out: _Outgoing, started: datetime, ms: float, outcome: Outcome) -> None:
        attempt = out.attempts + 1
        values: dict = {
            "attempts": attempt,
            "lease_until": None,
            "lease_owner": None,
            "last_status_code": outcome.status_code,
            "last_error": outcome.error,
        }
        if outcome.ok:
            values.update(status=DeliveryStatus.delivered, delivered_at=_now())
        elif attempt >= self.policy.max_attempts or _hopeless(outcome):
            values.update(status=DeliveryStatus.failed)
        else:
            wait = self.policy.delay(attempt, outcome.retry_after)
            values.update(next_attempt_at=_now() + timedelta(seconds=wait))
        with self.sessions() as session, session.begin():
            _write(session)
            session.add(
                WebhookAttempt(
                    delivery_id=out.delivery_id,
                    attempt=attempt,
                    started_at=started,
                    duration_ms=ms,
                    status_code=outcome.status_code,
                    error=outcome.error,
                    response_head=outcome.response_head,
                )
            )
            session.execute(
                update(WebhookDelivery).where(WebhookDelivery.id == out.delivery_id).values(**values)
            )
        if outcome.error:
            log.warning(
                "%s delivery %s attempt %d: %s", out.kind.value, out.delivery_id, attempt, outcome.error
            )

    def run_once(self) -> tuple[int, int]:
        """Send everything due now: (delivered, failed attempts).

        One delivery's failure never holds up the others: whatever goes wrong while sending it, the
        next one is sent in the same pass (the failed one's lease runs out, and it is sent again)."""
        delivered = failed = 0
        for delivery_id in self.claim():
            try:
                sent = self.send(delivery_id)
            except Exception:
                log.exception("webhook delivery %s could not be sent", delivery_id)
                sent = False
            if sent:
                delivered += 1
            else:
                failed += 1
        return delivered, failed

    # in the background ----------------------------------------------------------------------------------
    def wake(self) -> None:
        self._wake.set()

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                delivered, failed = self.run_once()
            except Exception:  # the database may be briefly unavailable; keep the loop alive
                log.exception("webhook delivery pass failed")
                delivered = failed = 0
            if delivered or failed:
                continue
            self._wake.wait(self.policy.poll_seconds)
            self._wake.clear()

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="tewatch-webhooks", daemon=True)
            self._thread.start()

    def stop(self, timeout: float = 15.0) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None
        self.client.close()

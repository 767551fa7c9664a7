"""The outbox worker: claims due deliveries with a lease, POSTs them signed (or, for the GitHub
subscription, hands them to tewatch.github), logs every attempt, retries with exponential backoff (or
after the wait the far side asked for, when longer), and gives up (status `failed`) after the last
attempt or an answer no retry can change.

Subscriptions do not wait for one another: the worker sends the first due delivery of each subscription
at once, each on a thread of its own (up to `parallel`), and each delivery ends by a total deadline, so a
receiver that answers a byte every few seconds holds up its own deliveries only. The delivery log says
what came back, or that nothing did, in the same words whatever the reason: it does not tell a closed
port from an open one that speaks no HTTP (the service's own log keeps the detail).

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
from collections.abc import Collection
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Protocol

import httpx
from sqlalchemy import Engine, func, or_, select, update
from sqlalchemy.orm import Session, sessionmaker

from tewatch.alerts.destinations import RefusedDestination
from tewatch.alerts.outcome import Outcome
from tewatch.alerts.signing import DELIVERY_HEADER, EVENT_HEADER, SIGNATURE_HEADER, sign
from tewatch.alerts.webhook_client import webhook_client
from tewatch.store.engine.contention import unavailable_reason
from tewatch.store.engine.database import WRITE_TRANSACTION, session_factory
from tewatch.store.schema.alert_models import (
    DeliveryStatus,
    SubscriptionKind,
    WebhookAttempt,
    WebhookDelivery,
    WebhookSubscription,
)


class Publisher(Protocol):
    """Sends a GitHub delivery's body (tewatch.github.publisher.GitHubPublisher does)."""

    def publish(self, body: bytes | str) -> Outcome: ...


log = logging.getLogger(__name__)

RESPONSE_HEAD_CHARS = 500
UNSENDABLE = "unsendable URL: "  # how the error of an attempt that could not even start begins
REFUSED = "refused destination: "  # an internal address (tewatch.alerts.destinations): never sent to
NO_ANSWER = "no HTTP answer (the connection failed, broke off or passed the deadline)"


@dataclass(frozen=True)
class DeliveryPolicy:
    timeout_seconds: float = 10.0  # each step of a delivery: connect, each read, each write
    deadline_seconds: float = 30.0  # a whole delivery, however slowly the receiver answers
    parallel: int = 8  # deliveries in flight at once, each to a different subscription
    allow_loopback: bool = False  # send to loopback receivers (tewatch.alerts.destinations)
    max_attempts: int = 10
    backoff_seconds: float = 5.0
    backoff_max_seconds: float = 3600.0
    lease_seconds: float = 60.0
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
    return (
        outcome.final
        or error == "subscription removed"
        or error.startswith(UNSENDABLE)
        or error.startswith(REFUSED)
    )


class OutboxWorker:
    def __init__(
        self,
        engine: Engine,
        policy: DeliveryPolicy | None = None,
        github: Publisher | None = None,
    ):
        self.sessions: sessionmaker[Session] = session_factory(engine)
        self.policy = policy or DeliveryPolicy()
        self.client = webhook_client(
            self.policy.allow_loopback, self.policy.timeout_seconds, self.policy.deadline_seconds
        )
        self.github = github
        # a worker claims only what it can send: the GitHub subscription's deliveries wait for a worker
        # configured for GitHub
        self.kinds = [SubscriptionKind.webhook, *([SubscriptionKind.github] if github else [])]
        self.owner = uuid.uuid4().hex
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._senders = ThreadPoolExecutor(self.policy.parallel, thread_name_prefix="tewatch-webhook")
        self._in_flight: dict[str, int] = {}  # delivery id -> its subscription, while being sent
        self._in_flight_lock = threading.Lock()

    # one pass -------------------------------------------------------------------------------------------
    def claim(self, busy: Collection[int] = (), limit: int | None = None) -> list[tuple[str, int]]:
        """Lease the first due delivery of each subscription not in `busy` (at most `limit` of them):
        (delivery id, subscription id)."""
        now = _now()
        token = f"{self.owner}:{uuid.uuid4().hex[:8]}"
        claimable = (
            (WebhookDelivery.status == DeliveryStatus.pending)
            & (WebhookDelivery.next_attempt_at <= now)
            & or_(WebhookDelivery.lease_until.is_(None), WebhookDelivery.lease_until < now)
        )
        place = func.row_number().over(
            partition_by=WebhookDelivery.subscription_id,
            order_by=(WebhookDelivery.next_attempt_at, WebhookDelivery.id),
        )
        due = (
            select(WebhookDelivery.id, WebhookDelivery.next_attempt_at, place.label("place"))
            .join(WebhookSubscription)
            .where(
                claimable,
                WebhookSubscription.kind.in_(self.kinds),
                WebhookDelivery.subscription_id.not_in(list(busy)),
            )
            .subquery()
        )
        due_ids = (
            select(due.c.id)
            .where(due.c.place == 1)
            .order_by(due.c.next_attempt_at)
            .limit(limit or self.policy.parallel)
            .scalar_subquery()
        )
        with self.sessions() as session, session.begin():
            _write(session)
            session.execute(
                update(WebhookDelivery)
                .where(WebhookDelivery.id.in_(due_ids), claimable)
                .values(lease_until=now + timedelta(seconds=self.policy.lease_seconds), lease_owner=token)
                .execution_options(synchronize_session=False)
            )
        with self.sessions() as session:
            claimed = session.execute(
                select(WebhookDelivery.id, WebhookDelivery.subscription_id).where(
                    WebhookDelivery.lease_owner == token
                )
            )
            return [(delivery_id, subscription_id) for delivery_id, subscription_id in claimed]

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
            with self.client.stream("POST", out.url, content=out.body, headers=headers) as response:
                status_code, head = response.status_code, _head(response)
        except RefusedDestination as exc:
            return Outcome(error=f"{REFUSED}{exc}"[:1000])
        except httpx.HTTPError as exc:
            log.info("webhook delivery %s to %s: %s: %s", out.delivery_id, out.url, type(exc).__name__, exc)
            return Outcome(error=NO_ANSWER)
        except (httpx.InvalidURL, ValueError) as exc:  # a URL no request can go to (IDNA: ValueError)
            return Outcome(error=f"{UNSENDABLE}{type(exc).__name__}: {exc}"[:1000])
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

    def dispatch(self) -> list[Future[bool]]:
        """Start sending the first due delivery of every subscription that has none in flight, each on a
        sender thread of its own; a future per delivery says whether the receiver took it."""
        with self._in_flight_lock:
            busy = set(self._in_flight.values())
            room = self.policy.parallel - len(self._in_flight)
        if room <= 0:
            return []
        futures = []
        for delivery_id, subscription_id in self.claim(busy, room):
            with self._in_flight_lock:
                self._in_flight[delivery_id] = subscription_id
            futures.append(self._senders.submit(self._send_in_turn, delivery_id))
        return futures

    def _send_in_turn(self, delivery_id: str) -> bool:
        """One delivery on a sender thread: whatever goes wrong is logged (its lease runs out and it is
        sent again); then the subscription's next delivery may go."""
        try:
            return self.send(delivery_id)
        except Exception:
            log.exception("webhook delivery %s could not be sent", delivery_id)
            return False
        finally:
            with self._in_flight_lock:
                self._in_flight.pop(delivery_id, None)
            self._wake.set()

    def run_once(self) -> tuple[int, int]:
        """Send the first due delivery of every subscription, in parallel, and wait for them all:
        (delivered, failed attempts)."""
        sent = [future.result() for future in self.dispatch()]
        return sum(sent), len(sent) - sum(sent)

    # in the background ----------------------------------------------------------------------------------
    def wake(self) -> None:
        self._wake.set()

    def _loop(self) -> None:
        waiting_for_database = False
        while not self._stop.is_set():
            self._wake.clear()
            try:
                self.dispatch()
                waiting_for_database = False
            except Exception as exc:  # the database may be briefly unavailable; keep the loop alive
                reason = unavailable_reason(exc)
                if reason is None:
                    log.exception("webhook delivery pass failed")
                elif not waiting_for_database:  # said once an outage, not at every poll
                    log.warning("webhook delivery waits for the database: %s", reason)
                waiting_for_database = reason is not None
            self._wake.wait(self.policy.poll_seconds)

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
        self.close()

    def close(self) -> None:
        """Stop taking deliveries; one in flight ends by its deadline (its lease, if cut short, runs out
        and another worker sends it again)."""
        self._senders.shutdown(wait=False, cancel_futures=True)
        self.client.close()


def _head(response: httpx.Response) -> str:
    """The start of an answer, read no further than RESPONSE_HEAD_CHARS however long it is."""
    read = bytearray()
    for chunk in response.iter_raw():
        read += chunk
        if len(read) >= RESPONSE_HEAD_CHARS * 4:  # enough bytes for that many characters of UTF-8
            break
    return read.decode(response.encoding or "utf-8", errors="replace")[:RESPONSE_HEAD_CHARS]

"""Tables of detection and alerting: change points, PR comparisons, alerts with a lifecycle, webhook
subscriptions, and the webhook outbox (events, one delivery per subscription, every attempt logged).

Every verdict row keeps the baseline, limits, effect and detector version it was decided with. Alerts,
events and deliveries are written in one transaction, so an alert never exists without its deliveries.
"""

from __future__ import annotations

import enum
from datetime import datetime

from sqlalchemy import (
    JSON,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column, relationship

from tewatch.store.schema.models import Base, _enum, utcnow


class AlertKind(str, enum.Enum):
    correctness = "correctness"  # a case's verdict left `pass`
    regression = "regression"  # a timing (or throughput, or bytes) change for the worse
    numerics = "numerics"  # an error metric's change for the worse on a branch
    kernels = "kernels"  # what a case call runs changed on a branch (docs/kernels.md)


# the alerts a branch's change point opens, which letting go and withdrawing follow
CHANGE_POINT_KINDS = (AlertKind.regression, AlertKind.numerics)


class AlertStatus(str, enum.Enum):
    open = "open"
    acknowledged = "acknowledged"
    resolved = "resolved"
    dismissed = "dismissed"


class DeliveryStatus(str, enum.Enum):
    pending = "pending"
    delivered = "delivered"
    failed = "failed"  # gave up after the last attempt; can be redelivered by hand


class Detection(Base):
    """A change point on a branch's history of one series (or of a derived ratio series)."""

    __tablename__ = "detections"
    __table_args__ = (Index("ix_detections_series_branch", "series_key", "branch"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    series_id: Mapped[int | None] = mapped_column(ForeignKey("series.id"), index=True)
    series_key: Mapped[str] = mapped_column(String(400))
    branch: Mapped[str] = mapped_column(String(200), default="")
    gpu_model: Mapped[str] = mapped_column(String(200), default="")
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), index=True)
    commit_id: Mapped[int] = mapped_column(ForeignKey("commits.id"))
    before_commit_id: Mapped[int] = mapped_column(ForeignKey("commits.id"))
    first_possible_commit_id: Mapped[int] = mapped_column(ForeignKey("commits.id"))
    direction: Mapped[str] = mapped_column(String(16))
    baseline: Mapped[float] = mapped_column(Float)
    level_after: Mapped[float] = mapped_column(Float)
    lower_limit: Mapped[float] = mapped_column(Float)
    upper_limit: Mapped[float] = mapped_column(Float)
    effect: Mapped[float] = mapped_column(Float)
    z: Mapped[float] = mapped_column(Float)
    sigma: Mapped[float] = mapped_column(Float)
    n_before: Mapped[int] = mapped_column(Integer)
    n_after: Mapped[int] = mapped_column(Integer)
    environment_shift: Mapped[bool] = mapped_column(Boolean, default=False)
    environment_changes: Mapped[dict] = mapped_column(JSON, default=dict)
    detector_version: Mapped[str] = mapped_column(String(120))
    config: Mapped[dict] = mapped_column(JSON, default=dict)
    active: Mapped[bool] = mapped_column(Boolean, default=True)  # False once later history withdraws it
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, onupdate=utcnow)


class PrComparison(Base):
    """One case of a pull request's run against the merge base's runs (tewatch.pipeline.merge_base.merge_base_runs)."""

    __tablename__ = "pr_comparisons"
    __table_args__ = (UniqueConstraint("head_run_id", "series_key", "detector_version"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    pr_number: Mapped[int] = mapped_column(Integer, index=True)
    head_run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), index=True)
    base_run_ids: Mapped[list] = mapped_column(JSON, default=list)
    series_id: Mapped[int | None] = mapped_column(ForeignKey("series.id"), index=True)
    series_key: Mapped[str] = mapped_column(String(400))
    verdict: Mapped[str] = mapped_column(String(16), index=True)
    baseline: Mapped[float | None] = mapped_column(Float)
    head: Mapped[float | None] = mapped_column(Float)
    effect: Mapped[float | None] = mapped_column(Float)
    ci_low: Mapped[float | None] = mapped_column(Float)
    ci_high: Mapped[float | None] = mapped_column(Float)
    p_value: Mapped[float | None] = mapped_column(Float)
    q_value: Mapped[float | None] = mapped_column(Float)
    n_base: Mapped[int] = mapped_column(Integer, default=0)
    n_head: Mapped[int] = mapped_column(Integer, default=0)
    between_run_sigma: Mapped[float | None] = mapped_column(Float)
    # where between_run_sigma came from (tewatch.detect.compare.NoiseSource); null before detector 2.2
    noise_source: Mapped[str | None] = mapped_column(String(16))
    # A/B rounds paired in the comparison (null: single runs), the modes of an `unstable` case, and
    # whether this series is the steadier timing of its case (the one that says `unchanged`)
    rounds: Mapped[int | None] = mapped_column(Integer)
    modes: Mapped[list | None] = mapped_column(JSON)
    primary: Mapped[bool | None] = mapped_column(Boolean)
    min_effect: Mapped[float] = mapped_column(Float)
    detector_version: Mapped[str] = mapped_column(String(120))
    config: Mapped[dict] = mapped_column(JSON, default=dict)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class Alert(Base):
    __tablename__ = "alerts"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    # one alert per thing that went wrong: re-running detection finds the same key and changes nothing
    dedupe_key: Mapped[str] = mapped_column(String(500), unique=True)
    kind: Mapped[AlertKind] = mapped_column(_enum(AlertKind, "alert_kind"), index=True)
    status: Mapped[AlertStatus] = mapped_column(
        _enum(AlertStatus, "alert_status"), default=AlertStatus.open, index=True
    )
    title: Mapped[str] = mapped_column(String(500))
    series_id: Mapped[int | None] = mapped_column(ForeignKey("series.id"), index=True)
    case_id: Mapped[int | None] = mapped_column(ForeignKey("cases.id"), index=True)
    detection_id: Mapped[int | None] = mapped_column(ForeignKey("detections.id", ondelete="SET NULL"))
    comparison_id: Mapped[int | None] = mapped_column(ForeignKey("pr_comparisons.id", ondelete="SET NULL"))
    verdict_id: Mapped[int | None] = mapped_column(ForeignKey("verdicts.id", ondelete="SET NULL"))
    run_id: Mapped[int | None] = mapped_column(ForeignKey("runs.id", ondelete="SET NULL"), index=True)
    branch: Mapped[str | None] = mapped_column(String(200))
    pr_number: Mapped[int | None] = mapped_column(Integer, index=True)
    gpu_model: Mapped[str] = mapped_column(String(200), default="")
    effect: Mapped[float | None] = mapped_column(Float)
    details: Mapped[dict] = mapped_column(JSON, default=dict)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, index=True)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, onupdate=utcnow)
    status_changes: Mapped[list[AlertStatusChange]] = relationship(
        back_populates="alert", order_by="AlertStatusChange.id", cascade="all, delete-orphan"
    )


class AlertStatusChange(Base):
    __tablename__ = "alert_status_changes"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    alert_id: Mapped[int] = mapped_column(ForeignKey("alerts.id", ondelete="CASCADE"), index=True)
    from_status: Mapped[str | None] = mapped_column(String(16))
    to_status: Mapped[str] = mapped_column(String(16))
    actor: Mapped[str] = mapped_column(String(200), default="")
    note: Mapped[str] = mapped_column(Text, default="")
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    alert: Mapped[Alert] = relationship(back_populates="status_changes")


class SubscriptionKind(str, enum.Enum):
    webhook = "webhook"  # signed POSTs to `url`
    github = "github"  # pull-request comments and statuses (tewatch.github), kept in step with the settings


class WebhookSubscription(Base):
    __tablename__ = "webhook_subscriptions"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    kind: Mapped[SubscriptionKind] = mapped_column(
        _enum(SubscriptionKind, "subscription_kind"),
        default=SubscriptionKind.webhook,
        server_default=SubscriptionKind.webhook.value,
    )
    url: Mapped[str] = mapped_column(String(2000))
    secret: Mapped[str] = mapped_column(String(500))
    event_types: Mapped[list] = mapped_column(JSON, default=list)
    description: Mapped[str] = mapped_column(String(500), default="")
    active: Mapped[bool] = mapped_column(Boolean, default=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    removed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class WebhookEvent(Base):
    """One typed event; `body` is the exact JSON text that is signed and sent."""

    __tablename__ = "webhook_events"
    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    type: Mapped[str] = mapped_column(String(64), index=True)
    body: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class WebhookDelivery(Base):
    """The outbox: one row per event and subscription, claimed by a worker with a lease."""

    __tablename__ = "webhook_deliveries"
    __table_args__ = (
        UniqueConstraint("event_id", "subscription_id"),
        Index("ix_webhook_deliveries_due", "status", "next_attempt_at"),
    )
    id: Mapped[str] = mapped_column(String(36), primary_key=True)  # the X-Tewatch-Delivery header
    event_id: Mapped[str] = mapped_column(ForeignKey("webhook_events.id", ondelete="CASCADE"))
    subscription_id: Mapped[int] = mapped_column(ForeignKey("webhook_subscriptions.id", ondelete="CASCADE"))
    status: Mapped[DeliveryStatus] = mapped_column(
        _enum(DeliveryStatus, "delivery_status"), default=DeliveryStatus.pending
    )
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    next_attempt_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    lease_until: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    lease_owner: Mapped[str | None] = mapped_column(String(64))
    last_status_code: Mapped[int | None] = mapped_column(Integer)
    last_error: Mapped[str | None] = mapped_column(Text)
    delivered_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    event: Mapped[WebhookEvent] = relationship()
    subscription: Mapped[WebhookSubscription] = relationship()


class WebhookAttempt(Base):
    """The delivery log: every POST tried, with what came back."""

    __tablename__ = "webhook_attempts"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    delivery_id: Mapped[str] = mapped_column(
        ForeignKey("webhook_deliveries.id", ondelete="CASCADE"), index=True
    )
    attempt: Mapped[int] = mapped_column(Integer)
    started_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    duration_ms: Mapped[float] = mapped_column(Float, default=0.0)
    status_code: Mapped[int | None] = mapped_column(Integer)
    error: Mapped[str | None] = mapped_column(Text)
    response_head: Mapped[str | None] = mapped_column(Text)


class ReleaseComparison(Base):
    """One series of a TE release's run against the runs of the release before it on the same branch and
    machine: the pull-request comparer on both sides' samples (one run per release is too few points for a
    change point). Rewritten whenever either side gains a run (tewatch.pipeline.release_steps)."""

    __tablename__ = "release_comparisons"
    __table_args__ = (
        UniqueConstraint("head_run_id", "series_id"),
        Index("ix_release_comparisons_step", "branch", "machine_id", "head_version"),
    )
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    branch: Mapped[str] = mapped_column(String(200))
    machine_id: Mapped[int] = mapped_column(ForeignKey("machines.id"))
    base_version: Mapped[str] = mapped_column(String(64))
    head_version: Mapped[str] = mapped_column(String(64))
    head_run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), index=True)
    base_run_ids: Mapped[list] = mapped_column(JSON, default=list)
    series_id: Mapped[int] = mapped_column(ForeignKey("series.id"), index=True)
    verdict: Mapped[str] = mapped_column(String(16))
    baseline: Mapped[float | None] = mapped_column(Float)
    head: Mapped[float | None] = mapped_column(Float)
    effect: Mapped[float | None] = mapped_column(Float)
    ci_low: Mapped[float | None] = mapped_column(Float)
    ci_high: Mapped[float | None] = mapped_column(Float)
    q_value: Mapped[float | None] = mapped_column(Float)
    n_base: Mapped[int] = mapped_column(Integer, default=0)
    n_head: Mapped[int] = mapped_column(Integer, default=0)
    min_effect: Mapped[float] = mapped_column(Float)
    detector_version: Mapped[str] = mapped_column(String(120))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class WebhookRedelivery(Base):
    """A redelivery asked for through the API: what its rate limit per subscription counts."""

    __tablename__ = "webhook_redeliveries"
    __table_args__ = (Index("ix_webhook_redeliveries_subscription", "subscription_id", "requested_at"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    subscription_id: Mapped[int] = mapped_column(ForeignKey("webhook_subscriptions.id", ondelete="CASCADE"))
    delivery_id: Mapped[str] = mapped_column(ForeignKey("webhook_deliveries.id", ondelete="CASCADE"))
    requested_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)

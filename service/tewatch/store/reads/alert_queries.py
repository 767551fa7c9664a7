"""Reads of alerts, deliveries, detections and comparisons, for the API, the pages and the CLI alike."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import case, select
from sqlalchemy.orm import Session

from tewatch.store.schema.alert_models import (
    Alert,
    AlertKind,
    AlertStatus,
    DeliveryStatus,
    Detection,
    PrComparison,
    WebhookDelivery,
)

LIVE_STATES = (AlertStatus.open, AlertStatus.acknowledged)
CLOSED_STATES = (AlertStatus.resolved, AlertStatus.dismissed)


def list_alerts(
    session: Session,
    status: str | None = None,
    kind: str | None = None,
    branch: str | None = None,
    pr_number: int | None = None,
    gpu_model: str | None = None,
    limit: int = 200,
    offset: int = 0,
    statuses: Sequence[AlertStatus] | None = None,
) -> list[Alert]:
    """Correctness alerts first, then the newest; closed ones alone (`statuses` CLOSED_STATES) newest
    closed first."""
    query = select(Alert)
    for column, value in (
        (Alert.status, status),
        (Alert.kind, kind),
        (Alert.branch, branch),
        (Alert.pr_number, pr_number),
        (Alert.gpu_model, gpu_model),
    ):
        if value is not None:
            query = query.where(column == value)
    if statuses is not None:
        query = query.where(Alert.status.in_(statuses))
    if statuses is not None and set(statuses) <= set(CLOSED_STATES):
        query = query.order_by(Alert.updated_at.desc(), Alert.id.desc())
    else:
        correctness_first = case((Alert.kind == AlertKind.correctness, 0), else_=1)
        query = query.order_by(correctness_first, Alert.created_at.desc(), Alert.id.desc())
    return list(session.scalars(query.limit(limit).offset(offset)))


def list_deliveries(
    session: Session,
    status: DeliveryStatus | None = None,
    subscription_id: int | None = None,
    limit: int = 200,
) -> list[WebhookDelivery]:
    query = select(WebhookDelivery)
    if status is not None:
        query = query.where(WebhookDelivery.status == status)
    if subscription_id is not None:
        query = query.where(WebhookDelivery.subscription_id == subscription_id)
    return list(session.scalars(query.order_by(WebhookDelivery.created_at.desc()).limit(limit)))


def list_detections(
    session: Session,
    branch: str | None = None,
    series_id: int | None = None,
    active: bool | None = True,
    limit: int = 500,
    offset: int = 0,
) -> list[Detection]:
    query = select(Detection)
    if branch is not None:
        query = query.where(Detection.branch == branch)
    if series_id is not None:
        query = query.where(Detection.series_id == series_id)
    if active is not None:
        query = query.where(Detection.active.is_(active))
    query = query.order_by(Detection.created_at.desc(), Detection.id.desc())
    return list(session.scalars(query.limit(limit).offset(offset)))


def pr_comparisons(session: Session, pr_number: int) -> list[PrComparison]:
    query = select(PrComparison).where(PrComparison.pr_number == pr_number)
    return list(session.scalars(query.order_by(PrComparison.head_run_id.desc(), PrComparison.id)))

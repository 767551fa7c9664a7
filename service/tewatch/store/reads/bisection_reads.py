"""Bisections as the API and the pages read them."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import select
from sqlalchemy.orm import Session, selectinload

from tewatch.store.schema.bisection_models import Bisection


def bisection(session: Session, bisection_id: int) -> Bisection | None:
    return session.scalars(
        select(Bisection).where(Bisection.id == bisection_id).options(selectinload(Bisection.steps))
    ).one_or_none()


def bisections(session: Session, alert_id: int | None, limit: int, offset: int) -> Sequence[Bisection]:
    query = select(Bisection).order_by(Bisection.id.desc()).limit(limit).offset(offset)
    if alert_id is not None:
        query = query.where(Bisection.alert_id == alert_id)
    return session.scalars(query).all()

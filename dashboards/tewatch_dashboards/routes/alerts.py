"""`/alerts`: open and acknowledged alerts with acknowledge / dismiss, and the history of closed ones.

The buttons call the service's token-protected alert API from tewatch.js with `Authorization: Bearer`;
the page itself only reads.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse
from sqlalchemy.orm import Session

from tewatch.store.alert_models import AlertKind
from tewatch.store.alert_queries import CLOSED_STATES, LIVE_STATES
from tewatch.store.detection_reads import alert_counts, alert_rows
from tewatch_dashboards.deps import get_session
from tewatch_dashboards.routes.common import error_page, render
from tewatch_dashboards.security import SecureHeadersRoute

router = APIRouter(route_class=SecureHeadersRoute)
# Where the buttons post {"status": "acknowledged" | "dismissed"}; tewatch.js fills in `{id}`.
ALERT_ACTION_URL = "/api/v1/alerts/{id}/status"


@router.get("/alerts", response_class=HTMLResponse)
def alerts(
    request: Request, session: Annotated[Session, Depends(get_session)], kind: str = ""
) -> HTMLResponse:
    kinds = [k.value for k in AlertKind]
    if kind and kind not in kinds:
        return error_page(request, 400, f"kind must be one of {', '.join(kinds)}, got {kind!r}")
    return render(
        request,
        "alerts.html",
        nav="alerts",
        title="Alerts",
        live=alert_rows(session, LIVE_STATES, kind=kind),
        history=alert_rows(session, CLOSED_STATES, kind=kind, limit=100),
        counts=alert_counts(session.connection()),
        kind=kind,
        kinds=kinds,
        action_url=ALERT_ACTION_URL,
    )

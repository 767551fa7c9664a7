"""`/alerts/{id}`: one alert, the exact `tewatch bisect` command that finds its commit while it is open,
and the bisections started from it."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse
from sqlalchemy.orm import Session

from tewatch.alerts.bisections import bisect_command
from tewatch.store.reads import bisection_reads
from tewatch.store.reads.bisect_endpoints import alert_endpoints
from tewatch.store.schema.alert_models import Alert, AlertStatus
from tewatch.web.deps import get_settings
from tewatch.web.params import PathInt
from tewatch_dashboards.deps import get_session
from tewatch_dashboards.routes.common import error_page, render
from tewatch_dashboards.security import SecureHeadersRoute

router = APIRouter(route_class=SecureHeadersRoute)


@router.get("/alerts/{alert_id}", response_class=HTMLResponse)
def alert_page(
    request: Request, alert_id: PathInt, session: Annotated[Session, Depends(get_session)]
) -> HTMLResponse:
    alert = session.get(Alert, alert_id)
    if alert is None:
        return error_page(request, 404, f"no alert {alert_id}")
    endpoints = alert_endpoints(session, alert) if alert.status is AlertStatus.open else None
    return render(
        request,
        "alert.html",
        nav="alerts",
        title=f"Alert {alert.id}",
        a=alert,
        command=bisect_command(alert, endpoints, get_settings(request).public_url) if endpoints else "",
        bisections=bisection_reads.bisections(session, alert.id, 100, 0),
    )

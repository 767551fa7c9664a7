"""`/alerts`: open and acknowledged alerts with acknowledge / dismiss, and the history of closed ones.

The buttons call the service's token-protected alert API from tewatch.js with `Authorization: Bearer`;
the page itself only reads.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse
from sqlalchemy.orm import Session

from tewatch.store.reads.alert_queries import CLOSED_STATES, LIVE_STATES
from tewatch.store.reads.detection_reads import AlertRow, alert_counts, alert_rows
from tewatch.store.reads.release_reads import RunRelease, run_releases
from tewatch.store.schema.alert_models import AlertKind
from tewatch_dashboards.deps import get_session
from tewatch_dashboards.routes.common import error_page, render
from tewatch_dashboards.security import SecureHeadersRoute

router = APIRouter(route_class=SecureHeadersRoute)
# Where the buttons post {"status": "acknowledged" | "dismissed"}; tewatch.js fills in `{id}`.
ALERT_ACTION_URL = "/api/v1/alerts/{id}/status"


def fixed_by_run(row: AlertRow) -> int | None:
    """The run whose passing verdict resolved a correctness alert (None for any other)."""
    run_id = (row.alert.details or {}).get("fixed_by_run")
    return run_id if isinstance(run_id, int) and not isinstance(run_id, bool) else None


def alert_runs(session: Session, rows: list[AlertRow]) -> dict[int, RunRelease]:
    """The TE release of each run an alert opened at or was fixed by."""
    run_ids = [r.alert.run_id for r in rows] + [fixed_by_run(r) for r in rows]
    return run_releases(session.connection(), run_ids)


@router.get("/alerts", response_class=HTMLResponse)
def alerts(
    request: Request, session: Annotated[Session, Depends(get_session)], kind: str = ""
) -> HTMLResponse:
    kinds = [k.value for k in AlertKind]
    if kind and kind not in kinds:
        return error_page(request, 400, f"kind must be one of {', '.join(kinds)}, got {kind!r}")
    live = alert_rows(session, LIVE_STATES, kind=kind)
    history = alert_rows(session, CLOSED_STATES, kind=kind, limit=100)
    return render(
        request,
        "alerts.html",
        nav="alerts",
        title="Alerts",
        live=live,
        history=history,
        runs=alert_runs(session, live + history),
        fixed_by_run=fixed_by_run,
        counts=alert_counts(session.connection()),
        kind=kind,
        kinds=kinds,
        action_url=ALERT_ACTION_URL,
    )

from typing import Literal

from fastapi import APIRouter, Depends, HTTPException, Request, status
from sqlalchemy.orm import Session

from tewatch.alerts.lifecycle import TransitionError, change_status
from tewatch.api.alert_schemas import AlertDetailOut, AlertOut, StatusChangeIn
from tewatch.api.schemas import BUSY, NOT_FOUND
from tewatch.store.engine.database import write_session
from tewatch.store.reads import alert_queries as queries
from tewatch.store.schema.alert_models import Alert, AlertKind
from tewatch.web.deps import TriageScope, get_engine, read_access
from tewatch.web.params import Offset, OptionalQueryInt, PathInt

router = APIRouter(tags=["alerts"])


@router.get("/api/v1/alerts", response_model=list[AlertOut], dependencies=[Depends(read_access)])
def list_alerts(
    request: Request,
    status: Literal["open", "acknowledged", "resolved", "dismissed"] | None = None,
    kind: AlertKind | None = None,
    branch: str | None = None,
    pr: OptionalQueryInt = None,
    gpu: str | None = None,
    limit: int = 200,
    offset: Offset = 0,
):
    """Alerts, correctness first, then the newest; at most 1000 a page (`offset` pages on)."""
    with Session(get_engine(request)) as session:
        return queries.list_alerts(session, status, kind, branch, pr, gpu, min(max(limit, 1), 1000), offset)


@router.get(
    "/api/v1/alerts/{alert_id}",
    response_model=AlertDetailOut,
    dependencies=[Depends(read_access)],
    responses=NOT_FOUND,
)
def get_alert(request: Request, alert_id: PathInt):
    with Session(get_engine(request)) as session:
        alert = session.get(Alert, alert_id)
        if alert is None:
            raise HTTPException(status.HTTP_404_NOT_FOUND, f"no alert {alert_id}")
        return AlertDetailOut.model_validate(alert)


@router.post(
    "/api/v1/alerts/{alert_id}/status",
    response_model=AlertDetailOut,
    dependencies=[TriageScope],
    responses={**NOT_FOUND, 409: {}, **BUSY},
)
def set_alert_status(request: Request, alert_id: PathInt, change: StatusChangeIn):
    """Acknowledge, resolve, dismiss or reopen an alert; the change is kept in its history."""
    with write_session(get_engine(request)) as session:
        alert = session.get(Alert, alert_id)
        if alert is None:
            raise HTTPException(status.HTTP_404_NOT_FOUND, f"no alert {alert_id}")
        try:
            change_status(session, alert, change.status, change.actor, change.note)
        except TransitionError as exc:
            raise HTTPException(status.HTTP_409_CONFLICT, str(exc)) from exc
        session.flush()
        return AlertDetailOut.model_validate(alert)

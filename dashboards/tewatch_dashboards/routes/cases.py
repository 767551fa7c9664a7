"""`/case/{id}`: one case on one GPU model: its latest verdict with error text, its series, its history, and for
a training case the overlay of its loss on its reference's (`/case/{id}/trajectory.svg`)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse, Response
from sqlalchemy.orm import Session

from tewatch.pipeline.training import overlay
from tewatch.web.deps import ReadConnection
from tewatch.web.params import OptionalQueryInt, PathInt
from tewatch_dashboards.deps import get_session
from tewatch_dashboards.routes.common import error_page, render
from tewatch_dashboards.security import SecureHeadersRoute
from tewatch_dashboards.trajectory_plot import render_overlay_svg
from tewatch_dashboards.views.case import case_detail

router = APIRouter(route_class=SecureHeadersRoute)


@router.get("/case/{case_id}", response_class=HTMLResponse)
def case(
    request: Request,
    case_id: PathInt,
    conn: ReadConnection,
    session: Annotated[Session, Depends(get_session)],
    branch: str = "",
    run: OptionalQueryInt = None,
) -> HTMLResponse:
    detail = case_detail(conn, case_id, branch=branch.strip())
    if detail is None:
        return error_page(request, 404, f"There is no case {case_id}.")
    training = overlay(session, case_id, run)
    return render(
        request,
        "case.html",
        nav="overview",
        title=detail.row.case_name,
        d=detail,
        branch=branch,
        training=training,
    )


@router.get("/case/{case_id}/trajectory.svg")
def trajectory_svg(
    case_id: PathInt, session: Annotated[Session, Depends(get_session)], run: OptionalQueryInt = None
) -> Response:
    """The case's loss in `run` (default: its newest) over its reference's, with the band."""
    found = overlay(session, case_id, run)
    if found is None:
        return Response(f"Case {case_id} has no trajectory there.", status_code=404, media_type="text/plain")
    return Response(render_overlay_svg(found), media_type="image/svg+xml")

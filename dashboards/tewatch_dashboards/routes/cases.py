"""`/case/{id}`: one case on one GPU model: its latest verdict with error text, its series, its history."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from tewatch.web.deps import ReadConnection
from tewatch.web.params import PathInt
from tewatch_dashboards.routes.common import error_page, render
from tewatch_dashboards.security import SecureHeadersRoute
from tewatch_dashboards.views.case import case_detail

router = APIRouter(route_class=SecureHeadersRoute)


@router.get("/case/{case_id}", response_class=HTMLResponse)
def case(
    request: Request,
    case_id: PathInt,
    conn: ReadConnection,
    branch: str = "",
) -> HTMLResponse:
    detail = case_detail(conn, case_id, branch=branch.strip())
    if detail is None:
        return error_page(request, 404, f"There is no case {case_id}.")
    return render(request, "case.html", nav="overview", title=detail.row.case_name, d=detail, branch=branch)

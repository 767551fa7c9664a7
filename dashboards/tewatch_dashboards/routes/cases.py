"""`/case/{id}`: one case on one GPU model: its latest verdict with error text, its series, its history."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse
from sqlalchemy.orm import Session

from tewatch.web.params import PathInt
from tewatch_dashboards import queries
from tewatch_dashboards.deps import get_session
from tewatch_dashboards.routes.common import error_page, render
from tewatch_dashboards.security import SecureHeadersRoute

router = APIRouter(route_class=SecureHeadersRoute)


@router.get("/case/{case_id}", response_class=HTMLResponse)
def case(
    request: Request, case_id: PathInt, session: Annotated[Session, Depends(get_session)], branch: str = ""
) -> HTMLResponse:
    detail = queries.case_detail(session, case_id, branch=branch.strip())
    if detail is None:
        return error_page(request, 404, f"There is no case {case_id}.")
    return render(request, "case.html", nav="overview", title=detail.row.case_name, d=detail, branch=branch)

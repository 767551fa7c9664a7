"""`/bisections/{id}`: a bisection's range, each step's commit, verdict and evidence, and its culprit."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse
from sqlalchemy.orm import Session

from tewatch.alerts.bisections import commit_url
from tewatch.store.reads import bisection_reads
from tewatch.web.params import PathInt
from tewatch_dashboards.deps import get_session
from tewatch_dashboards.routes.common import error_page, render
from tewatch_dashboards.security import SecureHeadersRoute

router = APIRouter(route_class=SecureHeadersRoute)


@router.get("/bisections/{bisection_id}", response_class=HTMLResponse)
def bisection(
    request: Request, bisection_id: PathInt, session: Annotated[Session, Depends(get_session)]
) -> HTMLResponse:
    found = bisection_reads.bisection(session, bisection_id)
    if found is None:
        return error_page(request, 404, f"no bisection {bisection_id}")
    return render(
        request,
        "bisection.html",
        nav="alerts",
        title=f"Bisection {found.id}",
        b=found,
        link=lambda sha: commit_url(found.repo, sha),
    )

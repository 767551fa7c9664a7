"""`/releases`: what changed from each TE release to the next (views/releases.py)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from tewatch.store.reads.filter_options import filter_options
from tewatch.web.deps import ReadConnection
from tewatch_dashboards.routes.common import render
from tewatch_dashboards.security import SecureHeadersRoute
from tewatch_dashboards.views.releases import releases_page

router = APIRouter(route_class=SecureHeadersRoute)


@router.get("/releases", response_class=HTMLResponse)
def releases(request: Request, conn: ReadConnection, branch: str = "") -> HTMLResponse:
    return render(
        request,
        "releases.html",
        nav="releases",
        title="Releases",
        page=releases_page(conn, branch.strip()),
        branch=branch.strip(),
        branches=filter_options(conn).branches,
    )

"""`/`: every suite's latest verdicts per GPU model, worst first, with filters and a search box."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse
from sqlalchemy.orm import Session
from tewatch.dashboards import queries
from tewatch.dashboards.deps import get_session
from tewatch.dashboards.routes.common import BadFilter, cached_content, error_page, parse_filters, render
from tewatch.dashboards.security import SecureHeadersRoute
from tewatch.dashboards.status import Severity

router = APIRouter(route_class=SecureHeadersRoute)
ROWS_SHOWN = 400


@router.get("/", response_class=HTMLResponse)
def overview(request: Request, session: Annotated[Session, Depends(get_session)], gpu: str = "",
             recipe: str = "", backend: str = "", branch: str = "", q: str = "", all: str = "") -> HTMLResponse:
    try:
        filters = parse_filters(gpu, recipe, backend, branch, q)
    except BadFilter as exc:
        return error_page(request, 400, str(exc))
    shown = None if all else ROWS_SHOWN

    def build() -> dict:
        data = queries.overview(session, filters, shown)
        return dict(data=data, filters=filters, options=queries.filter_options(session), sev=Severity,
                    show_search=True, shown=len(data.rows) if shown is None else shown)

    content = cached_content(request, session, "overview.html", build)
    return render(request, "page.html", nav="overview", title="Overview", content=content)

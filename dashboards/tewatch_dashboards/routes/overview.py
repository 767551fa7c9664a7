"""`/`: every suite's latest verdicts per GPU model, worst first, with filters and a search box; in pages
whose first holds every correctness failure and performance regression (`?all=1`: every case at once)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse

from tewatch.store.reads.filter_options import filter_options
from tewatch.store.schema.limits import INT32_MAX
from tewatch.web.deps import ReadConnection
from tewatch_dashboards.routes.common import (
    BadFilter,
    cached_content,
    error_page,
    filter_params,
    parse_filters,
    render,
    whole_number,
)
from tewatch_dashboards.security import SecureHeadersRoute
from tewatch_dashboards.status import Severity
from tewatch_dashboards.views.overview import overview as overview_of

router = APIRouter(route_class=SecureHeadersRoute)
PER_PAGE = (
    50  # cases per page after the first (which holds every failure and regression, and at least as many)
)
GROUP_NAMES = {
    Severity.failure: "Correctness failures",
    Severity.regression: "Performance regressions",
    Severity.improvement: "Performance improvements",
    Severity.passed: "Passing",
    Severity.unknown: "No verdict",
    Severity.unsupported: "Unsupported (capability gates)",
}


@router.get("/", response_class=HTMLResponse)
def overview(
    request: Request,
    conn: ReadConnection,
    gpu: str = "",
    recipe: str = "",
    backend: str = "",
    branch: str = "",
    q: str = "",
    all: str = "",
    page: Annotated[str, Query()] = "1",
) -> HTMLResponse:
    try:
        filters = parse_filters(gpu, recipe, backend, branch, q)
    except BadFilter as exc:
        return error_page(request, 400, str(exc))
    number = whole_number(page, 1, INT32_MAX)
    if number is None:
        return error_page(request, 400, f"page must be a whole number from 1 to {INT32_MAX}, got {page!r}")

    def build() -> dict:
        data = overview_of(conn, filters, page=1 if all else number, per_page=None if all else PER_PAGE)
        return {
            "data": data,
            "filters": filters,
            "options": filter_options(conn),
            "sev": Severity,
            "show_search": True,
            "show_all": bool(all),
            "group_names": GROUP_NAMES,
        }

    # every case at once has no bound on its size: rendered each time, never kept
    params = filter_params(filters, **({"all": "1"} if all else {"page": str(number) if number > 1 else ""}))
    content = cached_content(request, conn, "overview.html", params, build, cacheable=not all)
    return render(request, "page.html", nav="overview", title="Overview", content=content)

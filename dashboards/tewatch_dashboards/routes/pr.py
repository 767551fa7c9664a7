"""`/pr/{number}`: a pull request's verdicts against its merge base, sortable by effect, with links to series."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from sqlalchemy.orm import Session

from tewatch.findings.headline import combined, headline
from tewatch.findings.pr_report import SECTIONS
from tewatch.store.schema.limits import INT32_MAX
from tewatch.web.params import PathInt
from tewatch_dashboards.deps import get_session
from tewatch_dashboards.routes.common import error_page, render, whole_number
from tewatch_dashboards.security import SecureHeadersRoute
from tewatch_dashboards.views.pr import PR_SORTS, base_runs, pr_reports, pr_verdicts, suspect_series
from tewatch_dashboards.views.runs import pr_runs

router = APIRouter(route_class=SecureHeadersRoute)


@router.get("/pr", response_class=HTMLResponse)
def pr_jump(request: Request, number: str = "") -> Response:
    """The top bar's PR box: `/pr?number=123` (or `#123`) goes to `/pr/123`."""
    found = whole_number(number.strip().lstrip("#"), 0, INT32_MAX)
    if found is None:
        message = f"A pull request number is a whole number up to {INT32_MAX}, got {number!r}."
        return error_page(request, 400, message)
    return RedirectResponse(f"/pr/{found}", status_code=303)


@router.get("/pr/{number}", response_class=HTMLResponse)
def pr_page(
    request: Request,
    number: PathInt,
    session: Annotated[Session, Depends(get_session)],
    sort: str = "verdict",
) -> HTMLResponse:
    if sort not in PR_SORTS:
        return error_page(request, 400, f"sort must be one of {', '.join(PR_SORTS)}, got {sort!r}")
    runs = pr_runs(session.connection(), number)
    verdicts = pr_verdicts(session, number, sort)
    if not runs and not verdicts:
        return error_page(request, 404, f"Nothing has been uploaded for pull request #{number}.")
    reports = pr_reports(session, runs)
    headlines = [headline(report) for report in reports]
    return render(
        request,
        "pr.html",
        nav="",
        title=f"PR #{number}",
        number=number,
        runs=runs,
        verdicts=verdicts,
        sort=sort,
        reports=reports,
        headlines=headlines,
        page_headline=combined(headlines),
        suspects=suspect_series(reports),
        sections=SECTIONS,
        base_runs=base_runs(session.connection(), reports),
    )

"""`/series/{id}`: one series along the commit axis: the page, its chart data (JSON) and its SVG."""

from __future__ import annotations

import orjson
from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response
from sqlalchemy import Connection

from tewatch.store.reads.case_reads import FAILING_VERDICTS, case_verdicts
from tewatch.store.reads.filter_options import filter_options
from tewatch.store.reads.release_reads import series_steps
from tewatch.store.reads.series_reads import SeriesHeader, pr_comparison, series_header, series_version
from tewatch.web.deps import ReadConnection
from tewatch.web.params import OptionalQueryInt, PathInt
from tewatch_dashboards import series_chart
from tewatch_dashboards.plots import render_series_svg, svg_cache
from tewatch_dashboards.routes.common import error_page, render
from tewatch_dashboards.security import SVG_CONTENT_SECURITY_POLICY, SecureHeadersRoute
from tewatch_dashboards.series_chart import SCALES
from tewatch_dashboards.views.case_rows import case_rows
from tewatch_dashboards.views.filters import Filters

router = APIRouter(route_class=SecureHeadersRoute)
FAILED_SHOWN = 5  # the latest failed verdicts of the series' case, with their error text

RANGES = {"100": 100, "300": 300, "1000": 1000, "all": None}


class Refused(Exception):
    def __init__(self, status: int, detail: str):
        super().__init__(detail)
        self.status, self.detail = status, detail


def asked_chart(conn: Connection, series_id: int, last: str, scale: str) -> tuple[SeriesHeader, int | None]:
    """The series' header and how many of its newest points to show (None: all); Refused where there is no
    such series (404) or the range or scale is not one of those offered (400)."""
    header = series_header(conn, series_id)
    if header is None:
        raise Refused(404, f"There is no series {series_id}.")
    if last not in RANGES:
        raise Refused(400, f"last must be one of {', '.join(RANGES)}, got {last!r}")
    if scale not in SCALES:
        raise Refused(400, f"scale must be one of {', '.join(SCALES)}, got {scale!r}")
    return header, RANGES[last]


@router.get("/series/{series_id}", response_class=HTMLResponse)
def series_page(
    request: Request,
    series_id: PathInt,
    conn: ReadConnection,
    branch: str = "",
    last: str = "300",
    pr: OptionalQueryInt = None,
    scale: str = "auto",
) -> HTMLResponse:
    try:
        header, _ = asked_chart(conn, series_id, last, scale)
    except Refused as refused:
        return error_page(request, refused.status, refused.detail)
    failures = case_verdicts(
        conn,
        header.case_id,
        limit=FAILED_SHOWN,
        statuses=FAILING_VERDICTS,
        branch=branch.strip(),
        every_run=False,
    )
    case = case_rows(conn, Filters(branch=branch.strip()), header.case_id)
    steps = [s for s in series_steps(conn, [series_id]) if not branch.strip() or s.branch == branch.strip()]
    return render(
        request,
        "series.html",
        nav="overview",
        title=header.benchmark,
        h=header,
        failures=failures,
        case=case[0] if case else None,
        steps=steps,
        branch=branch,
        last=last,
        ranges=list(RANGES),
        total=series_version(conn, series_id, branch.strip())[0],
        branches=filter_options(conn).branches,
        pr=pr,
        scale=scale,
        comparison=pr_comparison(conn, series_id, pr) if pr is not None else None,
        pr_results=series_version(conn, series_id, pr=pr)[0] if pr is not None else 0,
    )


@router.get("/series/{series_id}/points.json")
def series_points(
    series_id: PathInt,
    conn: ReadConnection,
    branch: str = "",
    last: str = "300",
    pr: OptionalQueryInt = None,
    scale: str = "auto",
) -> Response:
    try:
        header, n = asked_chart(conn, series_id, last, scale)
    except Refused as refused:
        return JSONResponse({"detail": refused.detail}, status_code=refused.status)
    chart = series_chart.build(conn, header, branch.strip(), last=n, pr=pr)
    # orjson writes a non-finite number as null (JSON has none): an infinite value stored before uploads
    # refused them, or one a computation overflowed to, is a gap in the chart instead of a 500
    return Response(
        orjson.dumps(chart.as_json(scale), option=orjson.OPT_NON_STR_KEYS), media_type="application/json"
    )


@router.get("/series/{series_id}/plot.svg")
def series_svg(
    series_id: PathInt,
    conn: ReadConnection,
    branch: str = "",
    last: str = "300",
    pr: OptionalQueryInt = None,
    scale: str = "auto",
) -> Response:
    try:
        header, n = asked_chart(conn, series_id, last, scale)
    except Refused as refused:
        return Response(refused.detail, status_code=refused.status, media_type="text/plain")
    key: tuple = (
        series_id,
        branch.strip(),
        n,
        scale,
        series_version(conn, series_id, branch.strip()),
    )
    if pr is not None:
        comparison = pr_comparison(conn, series_id, pr)
        key += (
            pr,
            series_version(conn, series_id, pr=pr),
            comparison.id if comparison else None,
        )

    def rendered() -> str:
        chart = series_chart.build(conn, header, branch.strip(), last=n, pr=pr)
        return render_series_svg(chart, log_scale=chart.scale(scale) == "log")

    svg = svg_cache.get_or_render(key, rendered)
    return Response(
        svg,
        media_type="image/svg+xml",
        headers={"Cache-Control": "no-cache", "Content-Security-Policy": SVG_CONTENT_SECURITY_POLICY},
    )

"""`/runs`, `/runs/{id}` and `/machines`: what ran where, with driver, CUDA, torch and TE versions."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse

from tewatch.store.reads.filter_options import filter_options
from tewatch.store.reads.run_reads import run_repos
from tewatch.store.schema.limits import INT32_MAX
from tewatch.web.deps import ReadConnection
from tewatch.web.params import PathInt
from tewatch_dashboards.routes.common import error_page, render, whole_number
from tewatch_dashboards.security import SecureHeadersRoute
from tewatch_dashboards.views.runs import machine_rows, run_detail, runs_page

router = APIRouter(route_class=SecureHeadersRoute)
PER_PAGE = 50


@router.get("/runs", response_class=HTMLResponse)
def runs(
    request: Request,
    conn: ReadConnection,
    page: Annotated[str, Query()] = "1",
    gpu: str = "",
    repo: str = "",
) -> HTMLResponse:
    number = whole_number(page, 1, INT32_MAX)
    if number is None:
        return error_page(request, 400, f"page must be a whole number from 1 to {INT32_MAX}, got {page!r}")
    rows, total = runs_page(conn, page=number, per_page=PER_PAGE, gpu=gpu.strip(), repo=repo.strip())
    return render(
        request,
        "runs.html",
        nav="runs",
        title="Runs",
        rows=rows,
        total=total,
        page=number,
        pages=max(1, -(-total // PER_PAGE)),
        gpu=gpu,
        gpus=filter_options(conn).gpus,
        repo=repo,
        repos=run_repos(conn),
    )


@router.get("/runs/{run_id}", response_class=HTMLResponse)
def run(request: Request, run_id: PathInt, conn: ReadConnection) -> HTMLResponse:
    detail = run_detail(conn, run_id)
    if detail is None:
        return error_page(request, 404, f"There is no run {run_id}.")
    return render(request, "run.html", nav="runs", title=f"Run #{run_id}", d=detail)


@router.get("/machines", response_class=HTMLResponse)
def machines(request: Request, conn: ReadConnection) -> HTMLResponse:
    return render(request, "machines.html", nav="machines", title="Machines", rows=machine_rows(conn))

"""`/matrix`: compile vs eager, recipe x input rank x torch.compile mode, per case class and GPU model."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from tewatch.store.reads.filter_options import filter_options
from tewatch.web.deps import ReadConnection
from tewatch_dashboards.matrix_cells import check_cells, grid_cells
from tewatch_dashboards.routes.common import (
    BadFilter,
    cached_content,
    error_page,
    filter_params,
    parse_filters,
    render,
)
from tewatch_dashboards.security import SecureHeadersRoute
from tewatch_dashboards.site import site_facts
from tewatch_dashboards.views.matrix import MATRIX_RANKS, VIEWS, matrix_grids

router = APIRouter(route_class=SecureHeadersRoute)

MODE_LABELS = {"reduce-overhead": "reduce-ovh.", "max-autotune": "max-autot."}
CHECK_LABELS = {
    "shape_contract": "contract",
    "cpu_round_trip": "CPU round trip",
    "checkpoint": "checkpoint",
    "cpu_ops": "CPU ops",
    "determinism": "deterministic",
    "nd_update": "N-D update",
    "dcp_round_trip": "DCP round trip",
    "fsdp_dcp_round_trip": "FSDP2 DCP",
}


@router.get("/matrix", response_class=HTMLResponse)
def matrix(
    request: Request,
    conn: ReadConnection,
    gpu: str = "",
    recipe: str = "",
    backend: str = "",
    branch: str = "",
    world_size: str = "",
    view: str = "time",
) -> HTMLResponse:
    try:
        filters = parse_filters(gpu, recipe, backend, branch, world_size=world_size)
    except BadFilter as exc:
        return error_page(request, 400, str(exc))
    if view not in VIEWS:
        return error_page(request, 400, f"view must be one of {', '.join(VIEWS)}, got {view[:100]!r}")

    def build() -> dict:
        return {
            "matrices": matrix_grids(conn, filters, view),
            "view": view,
            "filters": filters,
            "options": filter_options(conn),
            "show_world_size": True,
            "ranks": MATRIX_RANKS,
            "grid_cells": grid_cells,
            "check_cells": check_cells,
            "mode_labels": MODE_LABELS,
            "check_labels": CHECK_LABELS,
            "has_grid": site_facts(request).has_grid,
        }

    # the time view is the page's default: its links and its cache entry carry no `view`
    shown = filter_params(filters, view=view if view != VIEWS[0] else None)
    content = cached_content(request, conn, "matrix.html", shown, build)
    return render(
        request, "page.html", nav="matrix", title="Compile vs eager", content=content, main_class="wide"
    )

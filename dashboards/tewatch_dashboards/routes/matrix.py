"""`/matrix`: compile vs eager, recipe x input rank x torch.compile mode, per case class and GPU model."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse
from sqlalchemy.orm import Session

from tewatch_dashboards import queries
from tewatch_dashboards.deps import get_session
from tewatch_dashboards.matrix_cells import row_cells
from tewatch_dashboards.routes.common import BadFilter, cached_content, error_page, parse_filters, render
from tewatch_dashboards.security import SecureHeadersRoute
from tewatch_dashboards.site import site_facts

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
    session: Annotated[Session, Depends(get_session)],
    gpu: str = "",
    recipe: str = "",
    backend: str = "",
    branch: str = "",
    world_size: str = "",
) -> HTMLResponse:
    try:
        filters = parse_filters(gpu, recipe, backend, branch, world_size=world_size)
    except BadFilter as exc:
        return error_page(request, 400, str(exc))

    def build() -> dict:
        return {
            "matrices": queries.matrix(session, filters),
            "filters": filters,
            "options": queries.filter_options(session),
            "show_world_size": True,
            "modes": queries.MATRIX_MODES,
            "ranks": queries.MATRIX_RANKS,
            "row_cells": row_cells,
            "mode_labels": MODE_LABELS,
            "check_labels": CHECK_LABELS,
            "has_grid": site_facts(request).has_grid,
        }

    content = cached_content(request, session, "matrix.html", build)
    return render(
        request, "page.html", nav="matrix", title="Compile vs eager", content=content, main_class="wide"
    )

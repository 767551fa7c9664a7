"""What every page handler shares: rendering with the common context, filter parsing, error pages."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from fastapi import Request
from fastapi.responses import HTMLResponse
from tewatch.dashboards.queries import Filters
from tewatch.dashboards.templating import format_time, templates


def render(request: Request, template: str, *, nav: str = "", title: str = "", status_code: int = 200,
           **context: Any) -> HTMLResponse:
    context.update(nav=nav, title=title, now=format_time(datetime.now(UTC)),
                   params=dict(request.query_params))
    return templates.TemplateResponse(request, template, context, status_code=status_code)


def error_page(request: Request, status_code: int, message: str) -> HTMLResponse:
    return render(request, "error.html", title=f"{status_code}", status_code=status_code, message=message)


class BadFilter(ValueError):
    pass


def parse_filters(gpu: str = "", recipe: str = "", backend: str = "", branch: str = "", q: str = "",
                  world_size: str = "") -> Filters:
    ws: int | None = None
    if world_size.strip():
        try:
            ws = int(world_size)
        except ValueError as exc:
            raise BadFilter(f"world_size must be a whole number, got {world_size!r}") from exc
    return Filters(gpu=gpu.strip(), recipe=recipe.strip(), backend=backend.strip(), branch=branch.strip(),
                   q=q.strip()[:200], world_size=ws)

"""What every page handler shares: rendering with the common context, filter parsing, error pages."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from fastapi import Request
from fastapi.responses import HTMLResponse
from markupsafe import Markup
from sqlalchemy import Connection

from tewatch.store.reads.store_state import store_state
from tewatch.store.schema.limits import INT32_MAX, INT32_MIN, int_problem
from tewatch_dashboards.render_cache import RenderCache
from tewatch_dashboards.site import site_facts
from tewatch_dashboards.templating import format_time, templates
from tewatch_dashboards.views.filters import Filters

_cache_lock = threading.Lock()
DEFAULT_CACHE_ENTRIES = 64
DEFAULT_CACHE_MB = 64


def render(
    request: Request, template: str, *, nav: str = "", title: str = "", status_code: int = 200, **context: Any
) -> HTMLResponse:
    context.update(
        nav=nav,
        title=title,
        now=format_time(datetime.now(UTC)),
        params=dict(request.query_params),
        site=site_facts(request),
    )
    return templates.TemplateResponse(request, template, context, status_code=status_code)


def content_cache(request: Request) -> RenderCache:
    """The app's cache of rendered page contents (one per app: apps on other databases share nothing)."""
    state = request.app.state
    with _cache_lock:
        if not hasattr(state, "dashboard_cache"):
            settings = getattr(state, "settings", None)
            state.dashboard_cache = RenderCache(
                getattr(settings, "dashboard_cache_entries", DEFAULT_CACHE_ENTRIES),
                getattr(settings, "dashboard_cache_mb", DEFAULT_CACHE_MB) * 2**20,
            )
        return state.dashboard_cache


def cached_content(
    request: Request,
    conn: Connection,
    template: str,
    params: dict[str, str],
    build: Callable[[], dict[str, Any]],
    *,
    cacheable: bool = True,
) -> Markup:
    """`template` rendered with what `build()` reads and the page's parsed `params` (its links carry
    those alone), reused while the store's state and the parsed parameters stay the same: the pages that
    read every case cost one small query between uploads, and parameters the page does not know make no
    new entry. A page that is not `cacheable` (one whose size has no bound) is rendered every time."""

    def rendered() -> str:
        return templates.get_template(template).render(params=params, **build())

    if not cacheable:
        return Markup(rendered())
    key = (template, tuple(sorted(params.items())), store_state(conn))
    return Markup(content_cache(request).get_or_render(key, rendered))


def filter_params(filters: Filters, **more: object) -> dict[str, str]:
    """The query parameters that say `filters` (and `more`), the empty ones left out."""
    spelled = {
        "gpu": filters.gpu,
        "recipe": filters.recipe,
        "backend": filters.backend,
        "branch": filters.branch,
        "q": filters.q,
        "world_size": "" if filters.world_size is None else str(filters.world_size),
        **{name: "" if value is None else str(value) for name, value in more.items()},
    }
    return {name: value for name, value in spelled.items() if value}


def error_page(request: Request, status_code: int, message: str) -> HTMLResponse:
    return render(request, "error.html", title=f"{status_code}", status_code=status_code, message=message)


class BadFilter(ValueError):
    pass


def whole_number(text: str, low: int, high: int) -> int | None:
    """The number `text` spells in decimal digits, if it lies in [low, high]; else None."""
    if not text.isdecimal() or len(text) > len(str(high)) + 2:  # "²" is a digit, not a decimal
        return None
    number = int(text)
    return number if low <= number <= high else None


def parse_filters(
    gpu: str = "", recipe: str = "", backend: str = "", branch: str = "", q: str = "", world_size: str = ""
) -> Filters:
    ws: int | None = None
    if world_size.strip():
        try:
            ws = int(world_size)
        except ValueError as exc:
            raise BadFilter(f"world_size must be a whole number, got {world_size!r}") from exc
        if int_problem(ws):
            raise BadFilter(f"world_size must be a whole number from {INT32_MIN} to {INT32_MAX}, got {ws}")
    return Filters(
        gpu=gpu.strip(),
        recipe=recipe.strip(),
        backend=backend.strip(),
        branch=branch.strip(),
        q=q.strip()[:200],
        world_size=ws,
    )

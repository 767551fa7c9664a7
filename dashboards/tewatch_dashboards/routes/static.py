"""`/static/...`: the pages' CSS, JavaScript and the vendored chart library, served from the package."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response
from starlette.exceptions import HTTPException
from starlette.staticfiles import StaticFiles

from tewatch_dashboards.security import SecureHeadersRoute
from tewatch_dashboards.templating import STATIC_DIR

router = APIRouter(route_class=SecureHeadersRoute)
_files = StaticFiles(directory=STATIC_DIR)
# URLs carry a content hash (templating.static_url), so a year of caching is safe.
CACHE_CONTROL = "public, max-age=31536000, immutable"


@router.get("/static/{path:path}", include_in_schema=False)
async def static(path: str, request: Request) -> Response:
    try:
        response = await _files.get_response(path, request.scope)
    except HTTPException as exc:
        return Response(exc.detail, status_code=exc.status_code, media_type="text/plain")
    if response.status_code == 200 and request.query_params.get("v"):
        response.headers["Cache-Control"] = CACHE_CONTROL
    return response

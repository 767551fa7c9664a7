"""`/docs`: the API's Swagger UI, served from the package (swagger-ui-dist under static/vendor/swagger-ui),
so that machines without internet access have API docs too. No inline script: static/api-docs.js starts
Swagger UI with the settings the page carries in data attributes, under the pages' strict CSP."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.openapi.docs import swagger_ui_default_parameters
from fastapi.responses import HTMLResponse

from tewatch_dashboards.security import SecureHeadersRoute
from tewatch_dashboards.templating import templates

router = APIRouter(route_class=SecureHeadersRoute)
# FastAPI's own defaults (BaseLayout, deep links, extensions), and no call to the online spec validator.
SWAGGER_UI_PARAMETERS = {**swagger_ui_default_parameters, "validatorUrl": None}


@router.get("/docs", response_class=HTMLResponse)
def api_docs(request: Request) -> HTMLResponse:
    app = request.app
    root_path = request.scope.get("root_path", "").rstrip("/")
    return templates.TemplateResponse(
        request,
        "api_docs.html",
        {
            "title": f"{app.title} API",
            "openapi_url": root_path + (app.openapi_url or "/openapi.json"),
            "parameters": SWAGGER_UI_PARAMETERS,
        },
    )

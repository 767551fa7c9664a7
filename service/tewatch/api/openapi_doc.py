"""What the OpenAPI document adds to what FastAPI derives from the routes, so that it promises only what
is served: RefuseNul's 400 on every operation, no NUL in any text parameter, and query times inside
the window the store keeps (tewatch.web.params); the 401 and 403 of every operation that needs a token
(its security scheme comes from tewatch.web.deps); and the links from an answer to the operations its ids
lead to (an upload to its run and results, a result to its series, an alert to its status change)."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI

NO_NUL = "^[^\\u0000]*$"
# 1971 to 2998: inside the store's window (1970 to 3000 UTC) whatever the time's offset
YEAR_IN_WINDOW = "^(197[1-9]|19[89][0-9]|2[0-8][0-9]{2}|29[0-8][0-9]|299[0-8])-"
NO_TOKEN = {
    "description": "no token, a malformed Authorization header, or an unknown or revoked token",
    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorAnswer"}}},
}
WRONG_SCOPE = {
    "description": "the token's scope does not grant this operation",
    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorAnswer"}}},
}
REFUSED = {
    "description": "a NUL character (%00) in the path or a query parameter",
    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorAnswer"}}},
}
RUN_OF_UPLOAD = {
    "GetRun": ("get", "/api/v1/runs/{run_id}", {"run_id": "$response.body#/run_id"}),
    "GetRunResults": ("get", "/api/v1/runs/{run_id}/results", {"run_id": "$response.body#/run_id"}),
}
# (method, path, status) of an answer -> link name -> (method, path, {parameter: runtime expression})
LINKS: dict[tuple[str, str, str], dict[str, tuple[str, str, dict[str, str]]]] = {
    ("post", "/api/v1/runs", "201"): RUN_OF_UPLOAD,
    ("post", "/api/v1/runs", "200"): RUN_OF_UPLOAD,
    ("get", "/api/v1/runs", "200"): {
        "GetFirstRun": ("get", "/api/v1/runs/{run_id}", {"run_id": "$response.body#/items/0/id"}),
        "GetFirstRunResults": ("get", "/api/v1/runs/{run_id}/results", {"run_id": "$response.body#/items/0/id"}),
    },
    ("get", "/api/v1/runs/{run_id}/results", "200"): {
        "GetFirstSeries": ("get", "/api/v1/series/{series_id}", {"series_id": "$response.body#/items/0/series_id"}),
    },
    ("get", "/api/v1/alerts", "200"): {
        "SetFirstAlertStatus": (
            "post", "/api/v1/alerts/{alert_id}/status", {"alert_id": "$response.body#/0/id"}
        ),
    },
    ("post", "/api/v1/alerts/{alert_id}/status", "200"): {
        "GetAlert": ("get", "/api/v1/alerts/{alert_id}", {"alert_id": "$response.body#/id"}),
    },
}  # fmt: skip


def install_openapi(app: FastAPI) -> None:
    derived = app.openapi

    def openapi() -> dict[str, Any]:
        document = derived()
        if not document.get("x-tewatch-completed"):
            complete(document)
            document["x-tewatch-completed"] = True
        return document

    app.openapi = openapi  # type: ignore[method-assign]  # FastAPI's way to extend its document


def complete(document: dict[str, Any]) -> None:
    for path_item in document.get("paths", {}).values():
        for operation in path_item.values():
            for parameter in operation.get("parameters", []):
                _constrain(parameter.get("schema", {}))
            operation.setdefault("responses", {}).setdefault("400", REFUSED)
            if operation.get("security"):
                operation["responses"].setdefault("401", NO_TOKEN)
                operation["responses"].setdefault("403", WRONG_SCOPE)
    _link(document)


def _link(document: dict[str, Any]) -> None:
    paths = document.get("paths", {})
    for (method, path, status), links in LINKS.items():
        answer = paths[path][method]["responses"][status]
        answer["links"] = {
            name: {"operationId": paths[target_path][target_method]["operationId"], "parameters": parameters}
            for name, (target_method, target_path, parameters) in links.items()
        }


def _constrain(schema: dict[str, Any]) -> None:
    for option in schema.get("anyOf", []):
        _constrain(option)
    if schema.get("type") != "string" or "pattern" in schema:
        return
    schema["pattern"] = YEAR_IN_WINDOW if schema.get("format") == "date-time" else NO_NUL

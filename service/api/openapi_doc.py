"""What the OpenAPI document adds to what FastAPI derives from the routes, so that it promises only what
is served: RefuseNul's 400 on every operation, no NUL in any text parameter, and query times inside
the window the store keeps (tewatch.api.params)."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI

NO_NUL = "^[^\\u0000]*$"
# 1971 to 2998: inside the store's window (1970 to 3000 UTC) whatever the time's offset
YEAR_IN_WINDOW = "^(197[1-9]|19[89][0-9]|2[0-8][0-9]{2}|29[0-8][0-9]|299[0-8])-"
REFUSED = {
    "description": "a NUL character (%00) in the path or a query parameter",
    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorAnswer"}}},
}


def install_openapi(app: FastAPI) -> None:
    derived = app.openapi

    def openapi() -> dict[str, Any]:
        document = derived()
        if not document.get("x-tewatch-completed"):
            complete(document)
            document["x-tewatch-completed"] = True
        return document

    app.openapi = openapi


def complete(document: dict[str, Any]) -> None:
    for path_item in document.get("paths", {}).values():
        for operation in path_item.values():
            for parameter in operation.get("parameters", []):
                _constrain(parameter.get("schema", {}))
            operation.setdefault("responses", {}).setdefault("400", REFUSED)


def _constrain(schema: dict[str, Any]) -> None:
    for option in schema.get("anyOf", []):
        _constrain(option)
    if schema.get("type") != "string" or "pattern" in schema:
        return
    schema["pattern"] = YEAR_IN_WINDOW if schema.get("format") == "date-time" else NO_NUL

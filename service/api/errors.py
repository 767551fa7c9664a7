"""Error answers: every 4xx says what is wrong, as JSON."""

from __future__ import annotations

from urllib.parse import parse_qsl

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from sqlalchemy.exc import DBAPIError
from starlette.types import ASGIApp, Receive, Scope, Send

from tewatch.ingest.errors import IngestError
from tewatch.store.contention import busy_reason

BUSY_RETRY_AFTER_SECONDS = 5


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(IngestError)
    async def _ingest_error(_: Request, exc: IngestError) -> JSONResponse:
        return JSONResponse(exc.as_dict(), status_code=exc.status_code)

    @app.exception_handler(DBAPIError)
    async def _database_error(request: Request, exc: DBAPIError) -> JSONResponse:
        reason = busy_reason(exc)
        if reason is None:
            raise exc
        return busy_answer(reason, request.app.state.settings.lock_wait_seconds)


def busy_answer(reason: str, waited_seconds: float) -> JSONResponse:
    """503 with Retry-After: the transaction waited for `reason` and was rolled back, nothing stored."""
    detail = (
        f"the store is busy ({reason}; a write waits up to {waited_seconds:g} s): nothing was stored, "
        f"try again in {BUSY_RETRY_AFTER_SECONDS} s"
    )
    return JSONResponse(
        {"detail": detail, "retry_after": BUSY_RETRY_AFTER_SECONDS},
        status_code=503,
        headers={"Retry-After": str(BUSY_RETRY_AFTER_SECONDS)},
    )


class RefuseNul:
    """A NUL character (%00) in the path or a query parameter answers 400: no text column keeps one
    (PostgreSQL refuses it even in a comparison), so every query with one would fail in the database."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            problem = nul_in_request(scope["path"], scope.get("query_string", b""))
            if problem:
                await JSONResponse({"detail": problem}, status_code=400)(scope, receive, send)
                return
        await self.app(scope, receive, send)


def nul_in_request(path: str, query_string: bytes) -> str | None:
    if "\x00" in path:
        return "the path contains a NUL character (%00)"
    if b"%00" not in query_string and b"\x00" not in query_string:
        return None
    for name, value in parse_qsl(query_string.decode("latin-1"), keep_blank_values=True):
        if "\x00" in name or "\x00" in value:
            shown = name.replace("\x00", "%00")
            return f"query parameter {shown!r} contains a NUL character (%00)"
    return None

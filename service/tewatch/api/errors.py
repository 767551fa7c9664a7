"""Error answers: every 4xx says what is wrong, as JSON; a store that is busy or cannot be reached is a 503
with Retry-After, never a 500."""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from typing import Any
from urllib.parse import parse_qsl

import orjson
import psycopg
from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exception_handlers import http_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import ValidationError
from sqlalchemy.exc import DBAPIError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Receive, Scope, Send

from tewatch.ingest.errors import IngestError, printable
from tewatch.store.engine.contention import busy_reason, unavailable_reason
from tewatch.store.schema.limits import json_problem

BUSY_RETRY_AFTER_SECONDS = 5
UNAVAILABLE_RETRY_AFTER_SECONDS = 10

log = logging.getLogger(__name__)
ERRORS_SHOWN = 20  # a 422 lists this many of a request's errors, then how many more there were
TOO_MANY = "too_many_errors"


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(IngestError)
    async def _ingest_error(_: Request, exc: IngestError) -> JSONResponse:
        return JSONResponse(exc.as_dict(), status_code=exc.status_code)

    @app.exception_handler(RequestValidationError)
    async def _invalid_request(_: Request, exc: RequestValidationError) -> JSONResponse:
        """FastAPI's 422, echoing only what an answer can carry: a JSON body may hold a lone surrogate
        (`"\\ud800"`), 1e999 or a 5,000-digit integer, on which FastAPI's own 422 failed (500)."""
        errors = [
            {**error, "input": _shown(error["input"])} if "input" in error else error
            for error in capped(list(exc.errors()))
        ]
        return JSONResponse({"detail": _printable_json(jsonable_encoder(errors))}, status_code=422)

    @app.exception_handler(HTTPException)
    async def _http_error(request: Request, exc: HTTPException):
        """FastAPI's answer, with request text a detail quotes made printable (see above)."""
        exc.detail = _printable_json(exc.detail)
        return await http_exception_handler(request, exc)

    @app.exception_handler(DBAPIError)
    @app.exception_handler(PoolTimeout)
    @app.exception_handler(psycopg.OperationalError)  # raw, from COPY
    async def _database_error(request: Request, exc: Exception) -> JSONResponse:
        reason = busy_reason(exc)
        if reason is not None:
            return busy_answer(reason, request.app.state.settings.lock_wait_seconds)
        reason = unavailable_reason(exc)
        if reason is not None:
            log.warning(
                "%s %s answered 503: %s (%s)",
                request.method,
                request.url.path,
                reason,
                exc.__class__.__name__,
            )
            return unavailable_answer(reason)
        raise exc


def capped(errors: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The first ERRORS_SHOWN errors, and one saying how many more there were (unless already capped:
    first_errors)."""
    if len(errors) <= ERRORS_SHOWN or errors[-1].get("type") == TOO_MANY:
        return list(errors)
    return [*errors[:ERRORS_SHOWN], _more(len(errors) - ERRORS_SHOWN)]


def first_errors(exc: ValidationError, prefix: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """A Pydantic error's first ERRORS_SHOWN errors (their locations under `prefix`) and a count of the
    rest, for a RequestValidationError."""
    errors = exc.errors(include_url=False)
    shown = [{**error, "loc": (*prefix, *error["loc"])} for error in errors[:ERRORS_SHOWN]]
    return [*shown, _more(len(errors) - ERRORS_SHOWN)] if len(errors) > ERRORS_SHOWN else shown


def _more(count: int) -> dict[str, Any]:
    return {"type": TOO_MANY, "loc": [], "msg": f"and {count:,} more errors"}


def _shown(value):
    """A request value as a 422 may echo it: text printable, numbers finite and short, anything else
    that JSON cannot carry (or that is large) summarised."""
    if isinstance(value, str):
        return printable(value[:1000])
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        return value if value.bit_length() <= 64 else f"an integer of {value.bit_length()} bits"
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if json_problem(value) is None and len(orjson.dumps(value)) <= 1000:
        return value
    return f"a {type(value).__name__} that is not shown"


def _printable_json(value):
    if isinstance(value, str):
        return printable(value)
    if isinstance(value, list):
        return [_printable_json(item) for item in value]
    if isinstance(value, dict):
        return {printable(key): _printable_json(item) for key, item in value.items()}
    return value


def retry_later_answer(detail: str, seconds: int) -> JSONResponse:
    """503 with Retry-After, the wait also in the body for clients that read only JSON."""
    return JSONResponse(
        {"detail": detail, "retry_after": seconds}, status_code=503, headers={"Retry-After": str(seconds)}
    )


def unavailable_answer(reason: str) -> JSONResponse:
    """503 with Retry-After: the database could not be used; a write was rolled back whole or never began."""
    detail = (
        f"the store is unavailable ({reason}): nothing was stored, try again in "
        f"{UNAVAILABLE_RETRY_AFTER_SECONDS} s"
    )
    return retry_later_answer(detail, UNAVAILABLE_RETRY_AFTER_SECONDS)


def busy_answer(reason: str, waited_seconds: float) -> JSONResponse:
    """503 with Retry-After: the transaction waited for `reason` and was rolled back, nothing stored."""
    detail = (
        f"the store is busy ({reason}; a write waits up to {waited_seconds:g} s): nothing was stored, "
        f"try again in {BUSY_RETRY_AFTER_SECONDS} s"
    )
    return retry_later_answer(detail, BUSY_RETRY_AFTER_SECONDS)


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

"""Error answers: every 4xx says what is wrong, as JSON."""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from tewatch.ingest.errors import IngestError


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(IngestError)
    async def _ingest_error(_: Request, exc: IngestError) -> JSONResponse:
        return JSONResponse(exc.as_dict(), status_code=exc.status_code)

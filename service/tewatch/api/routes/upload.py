import time
from typing import Annotated, Any, Literal

import psycopg
from fastapi import APIRouter, BackgroundTasks, Request, Response, status
from sqlalchemy.exc import DBAPIError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from starlette.concurrency import run_in_threadpool

from tewatch.api.background import detect_after_upload_task
from tewatch.api.schemas import BUSY, ErrorAnswer, Responses, UploadAnswer
from tewatch.api.upload_body import bundle_from_form, parse_form, read_limited_body
from tewatch.ingest.bounds import UploadBounds
from tewatch.ingest.errors import IngestError
from tewatch.ingest.service import ingest_bundle
from tewatch.store.engine.contention import busy_reason, unavailable_reason
from tewatch.web.deps import UploadScope, get_engine, get_settings

router = APIRouter(tags=["upload"])

REFUSED_OR_MALFORMED: dict[str, Any] = {
    "description": "a record the store cannot keep, naming its file and field; or a malformed `detect`",
    "content": {"application/json": {"schema": {"anyOf": [
        {"$ref": "#/components/schemas/ErrorAnswer"}, {"$ref": "#/components/schemas/HTTPValidationError"},
    ]}}},
}  # fmt: skip
ERRORS: Responses = {
    **{code: {"model": ErrorAnswer} for code in (400, 401, 413, 415)},
    422: REFUSED_OR_MALFORMED,
    **BUSY,
}


@router.post(
    "/api/v1/runs",
    response_model=UploadAnswer,
    status_code=status.HTTP_201_CREATED,
    responses={200: {"model": UploadAnswer, "description": "already stored"}, **ERRORS},
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {
                "multipart/form-data": {
                    "schema": {
                        "type": "object",
                        "properties": {
                            "result": {"type": "string", "format": "binary"},
                            "machine": {"type": "string", "format": "binary"},
                            "benchmarks": {"type": "string", "format": "binary"},
                            "run": {"type": "string", "format": "binary"},
                            "cases": {"type": "array", "items": {"type": "string", "format": "binary"}},
                            "asv_stderr": {"type": "string", "format": "binary"},
                            "repo": {"type": "string"},
                            "branch": {
                                "type": "string",
                                "description": "the branch benchmarked; a run that names neither a branch "
                                "nor a pull request is filed on main",
                            },
                            "pr_number": {"type": "integer"},
                            "merge_base_sha": {"type": "string"},
                            "commit_date": {"type": "string", "format": "date-time"},
                        },
                        "required": ["result", "machine", "benchmarks"],
                    }
                }
            },
        }
    },
)
async def upload_run(
    request: Request,
    response: Response,
    background: BackgroundTasks,
    _: Annotated[None, UploadScope],
    detect: Literal["now", "later"] = "now",
) -> UploadAnswer:
    """Store what one `asv run` left behind (see docs/records.md). The same upload twice answers 200
    with the run the first one created. `detect=later` leaves detection to one `POST /api/v1/detect` with
    the runs of a batch of uploads."""
    metrics = request.app.state.metrics
    settings = get_settings(request)
    limit = settings.max_upload_bytes
    bounds = UploadBounds(results=settings.max_upload_results, cases=settings.max_upload_cases)
    start = time.perf_counter()
    try:
        body = await read_limited_body(request, limit)
        bundle = await bundle_from_form(await parse_form(request, body))
        stored = await run_in_threadpool(ingest_bundle, get_engine(request), bundle, bounds)
    except IngestError:
        metrics.uploads.labels("rejected").inc()
        raise
    except (DBAPIError, PoolTimeout, psycopg.OperationalError) as exc:
        if busy_reason(exc):
            metrics.uploads.labels("busy").inc()
        elif unavailable_reason(exc):
            metrics.uploads.labels("unavailable").inc()
        raise
    metrics.ingest_seconds.observe(time.perf_counter() - start)
    metrics.uploads.labels("created" if stored.created else "already_stored").inc()
    if stored.created:
        metrics.results_ingested.inc(sum(stored.summary.get("results", {}).values()))
    if stored.created and detect == "now" and get_settings(request).detect_after_upload:
        background.add_task(detect_after_upload_task, request.app, stored.run_id)
    response.status_code = status.HTTP_201_CREATED if stored.created else status.HTTP_200_OK
    return UploadAnswer(
        run_id=stored.run_id,
        created=stored.created,
        digest=stored.digest,
        results=stored.summary.get("results", {}),
        verdicts=stored.summary.get("verdicts", {}),
        url=str(request.url_for("get_run", run_id=stored.run_id)),
        skipped_benchmarks=stored.summary.get("skipped_benchmarks"),
        results_format=stored.summary.get("results_format", 2),
    )

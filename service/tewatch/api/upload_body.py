"""Read a multipart upload within the size limit and turn it into an UploadBundle."""

from __future__ import annotations

from datetime import datetime

from fastapi import HTTPException, Request, status
from starlette.datastructures import FormData, UploadFile
from starlette.requests import Request as StarletteRequest

from tewatch.core.branches import branch_of_upload
from tewatch.ingest.bundle import UploadBundle
from tewatch.ingest.errors import IngestError
from tewatch.store.schema.limits import INT32_MAX, int_problem, max_chars, text_problem, time_problem
from tewatch.store.schema.models import Commit, Run

FILE_PARTS = {"result", "machine", "benchmarks", "run", "asv_stderr"}
REQUIRED_FILE_PARTS = ("result", "machine", "benchmarks")
MANY_FILE_PARTS = {"cases"}
TEXT_FIELDS = {"repo", "branch", "pr_number", "merge_base_sha", "commit_date"}
TEXT_COLUMNS = {"repo": Commit.repo, "branch": Run.branch, "merge_base_sha": Run.merge_base_sha}
MAX_PARTS = 100_000


def too_large(limit: int) -> HTTPException:
    return HTTPException(
        status.HTTP_413_REQUEST_ENTITY_TOO_LARGE, f"request body exceeds the upload limit of {limit} bytes"
    )


async def read_limited_body(request: Request, limit: int) -> bytes:
    """The whole body, refusing (413) as soon as it is known to be over the limit."""
    declared = request.headers.get("content-length")
    if declared is not None:
        if not declared.isdigit():
            raise HTTPException(status.HTTP_400_BAD_REQUEST, "invalid Content-Length header")
        if int(declared) > limit:
            raise too_large(limit)
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise too_large(limit)
    return bytes(body)


async def parse_form(request: Request, body: bytes) -> FormData:
    content_type = request.headers.get("content-type", "")
    if not content_type.startswith("multipart/form-data"):
        raise IngestError(
            f"expected multipart/form-data, got {content_type or 'no Content-Type'}", status_code=415
        )
    sent = False

    async def replay():
        nonlocal sent
        if sent:
            return {"type": "http.request", "body": b"", "more_body": False}
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    replayed = StarletteRequest(request.scope, replay)
    try:
        return await replayed.form(max_files=MAX_PARTS, max_fields=MAX_PARTS, max_part_size=len(body) + 1)
    except HTTPException as exc:
        raise IngestError(f"malformed multipart body: {exc.detail}", status_code=400) from exc


async def bundle_from_form(form: FormData) -> UploadBundle:
    files: dict[str, bytes] = {}
    cases: list[tuple[str, bytes]] = []
    fields: dict[str, str] = {}
    for name, value in form.multi_items():
        if isinstance(value, UploadFile):
            if name in MANY_FILE_PARTS:
                cases.append((value.filename or "", await value.read()))
            elif name in FILE_PARTS:
                if name in files:
                    raise IngestError("sent more than once", file=name, status_code=422)
                files[name] = await value.read()
            else:
                raise IngestError(
                    f"unknown file part {name!r}; expected one of {sorted(FILE_PARTS | MANY_FILE_PARTS)}"
                )
        elif name in TEXT_FIELDS:
            problem = text_problem(value, max_chars(TEXT_COLUMNS[name]) if name in TEXT_COLUMNS else None)
            if problem:
                raise IngestError(problem, field=name)
            fields[name] = value
        else:
            raise IngestError(
                f"unknown form field {name!r}; expected one of {sorted(TEXT_FIELDS)}", field=name
            )
    missing = [part for part in REQUIRED_FILE_PARTS if part not in files]
    if missing:
        raise IngestError(f"missing file part(s): {', '.join(missing)}", file=missing[0])
    pr_number = _int_field(fields.get("pr_number"), "pr_number")
    return UploadBundle(
        result=files["result"],
        machine=files["machine"],
        benchmarks=files["benchmarks"],
        run=files.get("run"),
        cases=cases,
        asv_stderr=files.get("asv_stderr"),
        repo=fields.get("repo", "").strip(),
        branch=branch_of_upload(fields.get("branch"), pr_number),
        pr_number=pr_number,
        merge_base_sha=fields.get("merge_base_sha") or None,
        commit_date=_date_field(fields.get("commit_date"), "commit_date"),
    )


def _int_field(value: str | None, name: str) -> int | None:
    if not value:
        return None
    try:
        number = int(value)
    except ValueError as exc:
        raise IngestError(f"expected an integer, got {value!r}", field=name) from exc
    if number <= 0:
        raise IngestError(f"expected a positive integer, got {number}", field=name)
    problem = int_problem(number, 1, INT32_MAX)
    if problem:
        raise IngestError(problem, field=name)
    return number


def _date_field(value: str | None, name: str) -> datetime | None:
    if not value:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError as exc:
        raise IngestError(f"expected an ISO 8601 date, got {value!r}", field=name) from exc
    if parsed.tzinfo is None:
        raise IngestError(f"the date needs a time zone, got {value!r}", field=name)
    problem = time_problem(parsed)
    if problem:
        raise IngestError(problem, field=name)
    return parsed

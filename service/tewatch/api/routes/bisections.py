"""Bisections: stored as `tewatch bisect` reports them (again after every step), listed and read back."""

from __future__ import annotations

import json
from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException, Request, status
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints
from sqlalchemy.orm import Session

from tewatch.alerts.bisections import BisectionReport, StepReport, UnknownLink, commit_url, store_bisection
from tewatch.api.alert_schemas import StoredText
from tewatch.api.schemas import BUSY, NOT_FOUND
from tewatch.api.times import UtcTime
from tewatch.store.engine.database import write_session
from tewatch.store.reads import bisection_reads
from tewatch.store.schema.limits import json_problem, text_problem
from tewatch.web.deps import UploadScope, get_engine, get_settings, read_access
from tewatch.web.params import Offset, OptionalQueryInt, PathInt

router = APIRouter(tags=["bisections"])

Sha = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{4,64}$")]
MAX_EVIDENCE_BYTES = 64 * 1024


def _storable_json(value: dict[str, Any]) -> dict[str, Any]:
    unstorable = json_problem(value)
    if unstorable:
        where, why = unstorable
        raise ValueError(f"{where}: {why}")
    try:
        text = json.dumps(value, allow_nan=False)
    except (ValueError, RecursionError) as exc:
        raise ValueError(f"not storable as JSON: {exc}") from None
    if len(text) > MAX_EVIDENCE_BYTES:
        raise ValueError(f"{len(text)} bytes of JSON, more than {MAX_EVIDENCE_BYTES}")
    problem = text_problem(text)
    if problem:
        raise ValueError(problem)
    return value


Evidence = Annotated[dict[str, Any], AfterValidator(_storable_json)]
Id32 = Annotated[int, Field(ge=1, le=2**31 - 1)]


class StepIn(BaseModel):
    position: Annotated[int, Field(ge=0, le=10_000_000)]
    sha: Sha
    verdict: Annotated[str, StringConstraints(pattern=r"^(good|bad|skip)$")]
    subject: StoredText = Field(default="", max_length=500)
    evidence: Evidence = Field(default_factory=dict)
    skip_reason: StoredText = Field(default="", max_length=5000)
    seconds: Annotated[float, Field(ge=0, le=1e9, allow_inf_nan=False)] = 0.0
    run_id: Id32 | None = None


class BisectionIn(BaseModel):
    repo: StoredText = Field(max_length=200)
    good: Sha
    bad: Sha
    judge: Annotated[str, StringConstraints(pattern=r"^(correctness|performance|value)$")]
    selection: StoredText = Field(max_length=500)
    status: Annotated[str, StringConstraints(pattern=r"^(running|finished|out_of_time|no_difference)$")]
    commits: Annotated[int, Field(ge=2, le=10_000_000)]
    message: StoredText = Field(default="", max_length=5000)
    culprit: Sha | None = None
    culprit_subject: StoredText = Field(default="", max_length=500)
    candidates: list[Sha] = Field(default_factory=list, max_length=100_000)
    endpoints: Evidence = Field(default_factory=dict)
    alert_id: Id32 | None = None
    detection_id: Id32 | None = None
    steps: list[StepIn] = Field(default_factory=list, max_length=10_000)

    def report(self) -> BisectionReport:
        return BisectionReport(
            repo=self.repo,
            good_sha=self.good,
            bad_sha=self.bad,
            judge=self.judge,
            selection=self.selection,
            status=self.status,
            commits=self.commits,
            message=self.message,
            culprit_sha=self.culprit,
            culprit_subject=self.culprit_subject,
            candidates=self.candidates,
            endpoints=self.endpoints,
            alert_id=self.alert_id,
            detection_id=self.detection_id,
            steps=[StepReport(**step.model_dump()) for step in self.steps],
        )


class StepOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    position: int
    sha: str
    subject: str
    verdict: str
    evidence: dict[str, Any]
    skip_reason: str
    seconds: float
    run_id: int | None


class BisectionOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    id: int
    repo: str
    good_sha: str
    bad_sha: str
    judge: str
    selection: str
    status: str
    message: str
    commits: int
    culprit_sha: str | None
    culprit_subject: str
    culprit_url: str = ""
    candidates: list[str]
    alert_id: int | None
    detection_id: int | None
    created_at: UtcTime
    updated_at: UtcTime


class BisectionDetailOut(BisectionOut):
    endpoints: dict[str, Any]
    steps: list[StepOut]


def _out(model: type[BisectionOut], row: Any) -> BisectionOut:
    found = model.model_validate(row)
    found.culprit_url = commit_url(row.repo, row.culprit_sha) if row.culprit_sha else ""
    return found


@router.post(
    "/api/v1/bisections",
    response_model=BisectionDetailOut,
    dependencies=[UploadScope],
    responses={**NOT_FOUND, **BUSY},
)
def post_bisection(request: Request, body: BisectionIn) -> BisectionOut:
    """Store a bisection, or replace the one stored for the same repository, endpoints, judge and
    selection; the first time it is stored finished, a `bisection.finished` event goes out."""
    with write_session(get_engine(request)) as session:
        try:
            stored = store_bisection(session, body.report(), get_settings(request).public_url)
        except UnknownLink as exc:
            raise HTTPException(status.HTTP_404_NOT_FOUND, str(exc)) from None
        return _out(BisectionDetailOut, stored)


@router.get("/api/v1/bisections", response_model=list[BisectionOut], dependencies=[Depends(read_access)])
def list_bisections(
    request: Request, alert: OptionalQueryInt = None, limit: int = 100, offset: Offset = 0
) -> list[BisectionOut]:
    """Bisections, newest first; `alert` keeps those started from that alert."""
    with Session(get_engine(request)) as session:
        rows = bisection_reads.bisections(session, alert, min(max(limit, 1), 1000), offset)
        return [_out(BisectionOut, row) for row in rows]


@router.get(
    "/api/v1/bisections/{bisection_id}",
    response_model=BisectionDetailOut,
    dependencies=[Depends(read_access)],
    responses=NOT_FOUND,
)
def get_bisection(request: Request, bisection_id: PathInt) -> BisectionOut:
    with Session(get_engine(request)) as session:
        row = bisection_reads.bisection(session, bisection_id)
        if row is None:
            raise HTTPException(status.HTTP_404_NOT_FOUND, f"no bisection {bisection_id}")
        return _out(BisectionDetailOut, row)

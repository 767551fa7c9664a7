from fastapi import APIRouter, Depends, HTTPException, Request
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool

from tewatch.api.alert_schemas import ComparisonOut, DetectIn, DetectionOut, DetectOut
from tewatch.api.schemas import BUSY, NOT_FOUND
from tewatch.store.reads import alert_queries as queries
from tewatch.web.deps import UploadScope, get_engine, get_settings, read_access
from tewatch.web.params import Offset, OptionalQueryInt, PathInt

router = APIRouter(tags=["detection"])


@router.get("/api/v1/detections", response_model=list[DetectionOut], dependencies=[Depends(read_access)])
def list_detections(
    request: Request,
    branch: str | None = None,
    series_id: OptionalQueryInt = None,
    active: bool | None = True,
    limit: int = 500,
    offset: Offset = 0,
):
    """Change points with their baseline, limits, effect and detector version, newest first; at most 5000 a
    page (`offset` pages on)."""
    with Session(get_engine(request)) as session:
        return queries.list_detections(session, branch, series_id, active, min(max(limit, 1), 5000), offset)


@router.get(
    "/api/v1/prs/{pr_number}/comparisons",
    response_model=list[ComparisonOut],
    dependencies=[Depends(read_access)],
)
def list_comparisons(request: Request, pr_number: PathInt):
    """Every case of a pull request's runs against the merge base, with verdict and interval."""
    with Session(get_engine(request)) as session:
        return queries.pr_comparisons(session, pr_number)


@router.post(
    "/api/v1/detect",
    response_model=DetectOut,
    dependencies=[UploadScope],
    responses={**BUSY, **NOT_FOUND},
)
async def run_detection(request: Request, body: DetectIn):
    """Run change-point detection over a branch's whole stored history now; with `runs`, what detection
    after each of those uploads would have done, in one pass (unless detection after upload is off)."""
    from tewatch.pipeline.batch import detect_after_uploads
    from tewatch.pipeline.branch_detection import detect_branch
    from tewatch.pipeline.summary import DetectSummary

    settings = get_settings(request)
    if body.runs is None:
        summary = await run_in_threadpool(
            detect_branch, get_engine(request), body.branch, settings.public_url
        )
    elif not settings.detect_after_upload:
        summary = DetectSummary()
    else:
        try:
            summary = await run_in_threadpool(
                detect_after_uploads, get_engine(request), body.runs, settings.public_url
            )
        except LookupError as exc:
            raise HTTPException(status_code=404, detail=str(exc)) from exc
    worker = getattr(request.app.state, "webhook_worker", None)
    if worker is not None and summary.events:
        worker.wake()
    return DetectOut(**{k: getattr(summary, k) for k in DetectOut.model_fields})

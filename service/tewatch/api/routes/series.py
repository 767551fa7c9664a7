from fastapi import APIRouter, HTTPException, Query

from tewatch.api.schemas import NOT_FOUND, SeriesAnswer
from tewatch.store.reads import queries
from tewatch.store.reads.series_reads import MAX_SAMPLES_PER_POINT, SAMPLES_PER_ANSWER
from tewatch.store.schema.limits import INT32_MAX
from tewatch.web.deps import ReadConnection
from tewatch.web.params import PathInt

router = APIRouter(tags=["series"])


@router.get(
    "/api/v1/series/{series_id}",
    response_model=SeriesAnswer,
    response_model_exclude_none=False,
    responses=NOT_FOUND,
)
def get_series(
    series_id: PathInt,
    conn: ReadConnection,
    branch: str | None = Query(None, description="only this branch's runs"),
    pr: int | None = Query(None, ge=1, le=INT32_MAX, description="only this pull request's runs"),
    limit: int = Query(
        1000,
        ge=1,
        le=100_000,
        description=f"the most recent N runs (fewer where their samples would pass {SAMPLES_PER_ANSWER:,})",
    ),
    offset: int = Query(0, ge=0, le=INT32_MAX, description="skip the most recent N runs (`next_offset`)"),
    max_points: int | None = Query(None, ge=2, description="downsample to about this many points"),
    samples: bool = Query(True, description="include the samples of every point"),
    samples_per_point: int = Query(
        MAX_SAMPLES_PER_POINT,
        ge=0,
        le=MAX_SAMPLES_PER_POINT,
        description="thin each point's samples to this many",
    ),
):
    """A series' points in commit order (the commit's place in the git graph, else its date, then run
    start, then run id), oldest first, as the series page draws them. Without `branch` or `pr`, the
    series' history: every run that is not a pull request's. `branch` keeps that branch's runs; `pr` keeps
    pull request `pr`'s runs instead (`branch` is then ignored).

    One answer costs a bounded amount: each point carries at most `samples_per_point` samples (evenly
    thinned, `sample_count` says how many are stored), and a page ends early, newest points kept, before
    its samples pass SAMPLES_PER_ANSWER (500,000); `next_offset` is the `offset` of the next, older page."""
    series = queries.get_series(
        conn,
        series_id,
        branch=branch,
        pr=pr,
        limit=limit,
        offset=offset,
        max_points=max_points,
        with_samples=samples,
        samples_per_point=samples_per_point,
    )
    if series is None:
        raise HTTPException(404, f"no series {series_id}")
    return series

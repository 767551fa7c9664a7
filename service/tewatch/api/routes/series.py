from fastapi import APIRouter, HTTPException, Query

from tewatch.api.schemas import NOT_FOUND, SeriesAnswer
from tewatch.store import queries
from tewatch.store.limits import INT32_MAX
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
    limit: int = Query(1000, ge=1, le=100_000, description="the most recent N runs"),
    max_points: int | None = Query(None, ge=2, description="downsample to about this many points"),
    samples: bool = Query(True, description="include every sample of every point"),
):
    """A series' points in commit order (the commit's place in the git graph, else its date, then run
    start, then run id), oldest first, as the series page draws them. Without `branch` or `pr`, the
    series' history: every run that is not a pull request's. `branch` keeps that branch's runs; `pr` keeps
    pull request `pr`'s runs instead (`branch` is then ignored)."""
    series = queries.get_series(
        conn, series_id, branch=branch, pr=pr, limit=limit, max_points=max_points, with_samples=samples
    )
    if series is None:
        raise HTTPException(404, f"no series {series_id}")
    return series

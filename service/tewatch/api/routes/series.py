from fastapi import APIRouter, HTTPException, Query

from tewatch.api.schemas import NOT_FOUND, SeriesAnswer
from tewatch.store import queries
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
    branch: str | None = None,
    limit: int = Query(1000, ge=1, le=100_000, description="the most recent N runs"),
    max_points: int | None = Query(None, ge=2, description="downsample to about this many points"),
    samples: bool = Query(True, description="include every sample of every point"),
):
    series = queries.get_series(
        conn, series_id, branch=branch, limit=limit, max_points=max_points, with_samples=samples
    )
    if series is None:
        raise HTTPException(404, f"no series {series_id}")
    return series

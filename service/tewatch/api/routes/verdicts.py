from typing import Literal

from fastapi import APIRouter

from tewatch.api.schemas import LatestVerdict
from tewatch.store.reads import queries
from tewatch.web.deps import ReadConnection

router = APIRouter(tags=["verdicts"])


@router.get("/api/v1/verdicts/latest", response_model=list[LatestVerdict])
def latest_verdicts(
    conn: ReadConnection,
    gpu: str | None = None,
    backend: str | None = None,
    recipe: str | None = None,
    case: str | None = None,
    branch: str | None = None,
    status: Literal["pass", "fail_accuracy", "error", "unsupported", "timeout", "oom"] | None = None,
):
    """The verdict of every case from the most recent run that judged it: on `branch`, or with none given,
    outside pull requests (the default history, as the dashboard's overview shows it)."""
    return queries.latest_verdicts(
        conn, gpu=gpu, backend=backend, recipe=recipe, case_name=case, branch=branch, status=status
    )

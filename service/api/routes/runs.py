from fastapi import APIRouter, HTTPException, Query
from tewatch.api.deps import ReadConnection
from tewatch.api.params import Offset, OptionalQueryInt, PathInt
from tewatch.api.schemas import RunDetail, RunPage
from tewatch.store import queries

router = APIRouter(tags=["runs"])


@router.get("/api/v1/runs", response_model=RunPage)
def list_runs(
    conn: ReadConnection,
    branch: str | None = None,
    gpu: str | None = Query(None, description="GPU model, e.g. NVIDIA H200"),
    machine: str | None = None,
    commit: str | None = Query(None, description="commit sha or a prefix of it"),
    pr: OptionalQueryInt = None,
    limit: int = Query(50, ge=1, le=1000),
    offset: Offset = 0,
):
    page = queries.list_runs(
        conn, branch=branch, gpu=gpu, machine=machine, commit=commit, pr_number=pr, limit=limit, offset=offset
    )
    return RunPage(**page.__dict__)


@router.get("/api/v1/runs/{run_id}", response_model=RunDetail)
def get_run(run_id: PathInt, conn: ReadConnection):
    run = queries.get_run(conn, run_id)
    if run is None:
        raise HTTPException(404, f"no run {run_id}")
    return run

from dataclasses import asdict
from typing import Annotated

from fastapi import APIRouter, HTTPException, Query

from tewatch.api.schemas import NOT_FOUND, RunDetail, RunPage, RunResultPage, RunSummary, TrajectoryOut
from tewatch.store.reads import queries
from tewatch.store.reads.run_reads import run_filters, run_row, run_rows
from tewatch.store.reads.trajectory_reads import run_trajectory
from tewatch.web.deps import ReadConnection
from tewatch.web.params import Offset, OptionalQueryInt, OptionalQueryTime, PathInt

router = APIRouter(tags=["runs"])


@router.get("/api/v1/runs", response_model=RunPage)
def list_runs(
    conn: ReadConnection,
    branch: str | None = None,
    gpu: str | None = Query(None, description="GPU model, e.g. NVIDIA H200"),
    machine: str | None = None,
    commit: str | None = Query(None, description="commit sha or a prefix of it"),
    pr: OptionalQueryInt = None,
    since: Annotated[
        OptionalQueryTime, Query(description="runs started at or after this time (ISO 8601)")
    ] = None,
    until: Annotated[OptionalQueryTime, Query(description="runs started before this time (ISO 8601)")] = None,
    limit: int = Query(50, ge=1, le=1000),
    offset: Offset = 0,
):
    """Runs, newest first. A run's start is asv's, or its upload time where asv recorded none."""
    terms = run_filters(
        branch=branch, gpu=gpu, machine=machine, commit=commit, pr_number=pr, since=since, until=until
    )
    found = run_rows(conn, terms, limit, offset)
    return RunPage(
        items=[RunSummary.of(r) for r in found.rows], total=found.total, limit=limit, offset=offset
    )


@router.get("/api/v1/runs/{run_id}", response_model=RunDetail, responses=NOT_FOUND)
def get_run(run_id: PathInt, conn: ReadConnection):
    row = run_row(conn, run_id)
    if row is None:
        raise HTTPException(404, f"no run {run_id}")
    return RunDetail.with_files(row, queries.run_files(conn, run_id))


@router.get("/api/v1/runs/{run_id}/results", response_model=RunResultPage, responses=NOT_FOUND)
def get_run_results(
    run_id: PathInt,
    conn: ReadConnection,
    limit: int = Query(1000, ge=1, le=10000),
    offset: Offset = 0,
    samples: bool = Query(True, description="include every sample of every result"),
):
    """Every result of a run with its case's labels, samples, verdict and GPU state, a page at a time."""
    if not queries.run_exists(conn, run_id):
        raise HTTPException(404, f"no run {run_id}")
    return RunResultPage(
        **queries.run_results(conn, run_id, limit=limit, offset=offset, with_samples=samples).__dict__
    )


@router.get("/api/v1/runs/{run_id}/trajectories/{case_id}", response_model=TrajectoryOut, responses=NOT_FOUND)
def get_trajectory(run_id: PathInt, case_id: PathInt, conn: ReadConnection):
    """A training case's trajectory in a run, whole: at most 10,000 steps, as uploads are bounded."""
    found = run_trajectory(conn, run_id, case_id)
    if found is None:
        raise HTTPException(404, f"no trajectory of case {case_id} in run {run_id}")
    return TrajectoryOut(**{k: v for k, v in asdict(found).items() if k != "id"})

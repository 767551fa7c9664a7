from fastapi import APIRouter, HTTPException, Query

from tewatch.api.schemas import (
    NOT_FOUND,
    BenchmarkEntry,
    CaseKernelPage,
    CaseKernelTable,
    CasePage,
    CommitPage,
    MachineEntry,
)
from tewatch.store.reads import queries
from tewatch.store.reads.case_reads import case_facts
from tewatch.store.reads.kernel_reads import case_kernel_count, case_kernel_runs
from tewatch.web.deps import ReadConnection
from tewatch.web.params import Offset, PathInt

MAX_KERNEL_RUNS = 100

router = APIRouter(tags=["catalog"])


@router.get("/api/v1/commits", response_model=CommitPage)
def list_commits(
    conn: ReadConnection,
    repo: str | None = None,
    branch: str | None = None,
    limit: int = Query(100, ge=1, le=1000),
    offset: Offset = 0,
):
    return CommitPage(
        **queries.list_commits(conn, repo=repo, branch=branch, limit=limit, offset=offset).__dict__
    )


@router.get("/api/v1/benchmarks", response_model=list[BenchmarkEntry])
def list_benchmarks(conn: ReadConnection, case: str | None = None):
    return queries.list_benchmarks(conn, case_name=case)


@router.get("/api/v1/machines", response_model=list[MachineEntry])
def list_machines(conn: ReadConnection):
    return queries.list_machines(conn)


@router.get("/api/v1/cases", response_model=CasePage)
def list_cases(
    conn: ReadConnection,
    case: str | None = None,
    gpu: str | None = None,
    machine: str | None = Query(None, description="asv's machine name"),
    group_key: str | None = Query(None, description="one case on every machine of its GPU model"),
    backend: str | None = None,
    recipe: str | None = None,
    limit: int = Query(500, ge=1, le=10000),
    offset: Offset = 0,
):
    page = queries.list_cases(
        conn,
        case_name=case,
        gpu=gpu,
        machine=machine,
        group_key=group_key,
        backend=backend,
        recipe=recipe,
        limit=limit,
        offset=offset,
    )
    return CasePage(**page.__dict__)


@router.get("/api/v1/cases/{case_id}/kernels", response_model=CaseKernelPage, responses=NOT_FOUND)
def case_kernels(
    case_id: PathInt,
    conn: ReadConnection,
    limit: int = Query(20, ge=1, le=MAX_KERNEL_RUNS, description="the newest N runs with a kernel table"),
    offset: Offset = 0,
):
    """A case's kernel tables (docs/kernels.md), newest run first: each kernel's calls and device time per
    case call, and the call's launches, synchronisations and copies. A table holds at most 500 kernels
    (ingest refuses more), so a page holds at most `limit` times that."""
    if case_facts(conn, case_id) is None:
        raise HTTPException(404, f"no case {case_id}")
    runs = case_kernel_runs(conn, case_id, limit=limit, offset=offset)
    items = [
        CaseKernelTable(
            run_id=r.table.run_id,
            commit_sha=r.commit_sha,
            te_version=r.te_version or None,
            branch=r.branch,
            pr_number=r.pr_number,
            started_at=r.at,
            device=r.table.device,
            profiled_calls=r.table.profiled_calls,
            launches_per_call=r.table.launches_per_call,
            syncs_per_call=r.table.syncs_per_call,
            copies_per_call=r.table.copies_per_call,
            kernels=r.table.kernels,
        )
        for r in runs
    ]
    total = case_kernel_count(conn, case_id)
    return CaseKernelPage(case_id=case_id, total=total, limit=limit, offset=offset, items=items)

from fastapi import APIRouter, Query

from tewatch.api.schemas import BenchmarkEntry, CasePage, CommitPage, MachineEntry
from tewatch.store import queries
from tewatch.web.deps import ReadConnection
from tewatch.web.params import Offset

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

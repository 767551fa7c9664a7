from fastapi import APIRouter, HTTPException

from tewatch.api.schemas import NOT_FOUND, Comparison
from tewatch.store import queries
from tewatch.web.deps import ReadConnection
from tewatch.web.params import QueryInt

router = APIRouter(tags=["runs"])


@router.get("/api/v1/compare", response_model=Comparison, responses=NOT_FOUND)
def compare(base: QueryInt, head: QueryInt, conn: ReadConnection):
    """Every series of two runs side by side, with the head/base ratio and what changed."""
    for run_id in (base, head):
        if queries.get_run(conn, run_id) is None:
            raise HTTPException(404, f"no run {run_id}")
    return Comparison(base=base, head=head, rows=queries.compare_runs(conn, base, head))

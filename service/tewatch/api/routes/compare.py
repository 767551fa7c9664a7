from fastapi import APIRouter, HTTPException
from sqlalchemy.orm import Session

from tewatch.api.schemas import NOT_FOUND, Comparison
from tewatch.detect.config import CompareConfig
from tewatch.pipeline.pr_comparison import compare_run_samples
from tewatch.store.reads import queries
from tewatch.web.deps import ReadConnection
from tewatch.web.params import QueryInt

router = APIRouter(tags=["runs"])


@router.get("/api/v1/compare", response_model=Comparison, responses=NOT_FOUND)
def compare(base: QueryInt, head: QueryInt, conn: ReadConnection):
    """Every series of two runs side by side, with the head/base ratio, what changed, and the detector's
    verdict on both runs' samples (as a pull request is judged against its merge base)."""
    for run_id in (base, head):
        if not queries.run_exists(conn, run_id):
            raise HTTPException(404, f"no run {run_id}")
    rows = queries.compare_runs(conn, base, head)
    with Session(bind=conn) as session:
        compared, _ = compare_run_samples(session, head, [base], CompareConfig())
    judged = {series_id: comparison for series_id, _, comparison in compared}
    for row in rows:
        if (comparison := judged.get(row["series_id"])) is not None:
            row.update(
                verdict=comparison.verdict.value,
                effect=comparison.effect,
                ci_low=comparison.ci_low,
                ci_high=comparison.ci_high,
            )
    return Comparison(base=base, head=head, rows=rows)

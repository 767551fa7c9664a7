"""`/pr/{number}`: a pull request's reports (what each head run changed against the merge base, then its
known failures), every series' verdict, and the head and base runs."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import Connection
from sqlalchemy.orm import Session

from tewatch.findings.pr_report import PrReport
from tewatch.pipeline.pr_report import stored_pr_report
from tewatch.store.reads.detection_reads import pr_verdicts as stored_pr_verdicts
from tewatch.store.reads.run_reads import RunRow, run_row, with_counts
from tewatch.store.reads.table_rows import PrComparisonFacts
from tewatch.store.schema.models import Run


@dataclass
class PrVerdictRow:
    comparison: PrComparisonFacts
    case_id: int | None
    case_name: str
    params: dict
    gpu_model: str
    benchmark: str
    unit: str

    @property
    def params_label(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in sorted(self.params.items()))


PR_SORTS = {
    "effect": lambda r: -abs(r.comparison.effect or 0.0),
    "effect_asc": lambda r: r.comparison.effect if r.comparison.effect is not None else 0.0,
    "effect_desc": lambda r: -(r.comparison.effect if r.comparison.effect is not None else 0.0),
    "verdict": lambda r: (
        {"regression": 0, "improvement": 1, "inconclusive": 2, "unchanged": 3}.get(r.comparison.verdict, 4),
        -abs(r.comparison.effect or 0.0),
    ),
    "case": lambda r: (r.case_name, r.params_label, r.gpu_model),
    "q": lambda r: r.comparison.q_value if r.comparison.q_value is not None else 2.0,
}


def pr_verdicts(session: Session, number: int, sort: str = "verdict") -> list[PrVerdictRow]:
    """The newest comparison of each series in the pull request, sorted by `sort` (PR_SORTS); a series
    that is gone is named by its key."""
    out = [
        PrVerdictRow(
            v.comparison,
            v.case_id,
            v.case_name or v.comparison.series_key,
            v.params or {},
            v.gpu_model or "",
            v.benchmark or v.comparison.series_key,
            v.unit or "seconds",
        )
        for v in stored_pr_verdicts(session.connection(), number)
    ]
    out.sort(key=PR_SORTS.get(sort, PR_SORTS["verdict"]))
    return out


def pr_reports(session: Session, runs: Sequence[RunRow]) -> list[PrReport]:
    """The report of each machine's newest head run (`runs` newest first), as detection made it."""
    newest: dict[int, RunRow] = {}
    for row in runs:
        newest.setdefault(row.machine.id, row)
    return [stored_pr_report(session, session.get_one(Run, row.run.id)) for row in newest.values()]


def base_runs(conn: Connection, reports: Sequence[PrReport]) -> list[RunRow]:
    """The merge base's runs the reports compare against, newest first."""
    ids = sorted({run_id for report in reports for run_id in report.base_run_ids}, reverse=True)
    return with_counts(conn, [row for row in (run_row(conn, i) for i in ids) if row is not None])


def suspect_series(reports: Sequence[PrReport]) -> set[int]:
    """The series whose speed-up the reports call suspect: their verdict is shown as such, not as an
    improvement."""
    return {
        row.series_id
        for report in reports
        for row in report.kernels
        if row.what == "suspect speed-up" and row.series_id is not None
    }

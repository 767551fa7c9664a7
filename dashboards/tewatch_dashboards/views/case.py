"""`/case/{id}`: one case's latest verdict, its series and its verdict history."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Connection

from tewatch.store.case_reads import SeriesSummary, VerdictRow, case_facts, case_series, case_verdicts
from tewatch_dashboards.views.case_rows import CaseRow, case_rows
from tewatch_dashboards.views.filters import Filters


@dataclass
class CaseDetail:
    row: CaseRow
    compute_capability: str
    labels: dict
    series: list[SeriesSummary]
    history: list[VerdictRow]


def case_detail(conn: Connection, case_id: int, branch: str = "", history: int = 30) -> CaseDetail | None:
    case = case_facts(conn, case_id)
    if case is None:
        return None
    rows = case_rows(conn, Filters(branch=branch), case_id)
    if not rows:
        return None
    return CaseDetail(
        row=rows[0],
        compute_capability=case.compute_capability,
        labels=case.labels or {},
        series=case_series(conn, case_id, branch),
        history=case_verdicts(conn, case_id, limit=history),
    )

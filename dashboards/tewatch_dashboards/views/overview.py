"""The overview: every case worst first, counted per suite and GPU, a page of them in full."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from sqlalchemy import Connection

from tewatch_dashboards.status import Severity
from tewatch_dashboards.views.case_rows import CaseRow, case_heads, fill_details
from tewatch_dashboards.views.filters import Filters


@dataclass
class SuiteSummary:
    suite: str
    gpu_model: str
    counts: dict[Severity, int] = field(default_factory=lambda: defaultdict(int))

    @property
    def total(self) -> int:
        return sum(self.counts.values())


@dataclass
class Overview:
    rows: list[CaseRow]  # every case that matches, worst first
    summaries: list[SuiteSummary]
    gpus: list[str]
    page: int = 1  # the page shown, 1-based
    pages: int = 1
    start: int = 0  # rows[start:end] are the page's, filled in full
    end: int = 0
    group_sizes: dict[Severity, int] = field(default_factory=dict)  # cases per severity, over every page

    @property
    def shown(self) -> list[CaseRow]:
        return self.rows[self.start : self.end]


def page_bounds(rows: Sequence[CaseRow], per_page: int) -> list[tuple[int, int]]:
    """(start, end) of each page of `rows` (worst first): the first holds every correctness failure and
    performance regression however many there are, and fills up to `per_page` with what follows; the
    others hold `per_page` each. Always one page at least."""
    first = min(len(rows), max(per_page, sum(1 for r in rows if r.severity <= Severity.regression)))
    bounds = [(0, first)]
    for start in range(first, len(rows), per_page):
        bounds.append((start, min(start + per_page, len(rows))))
    return bounds


def overview(conn: Connection, filters: Filters, page: int = 1, per_page: int | None = None) -> Overview:
    """Every case sorted worst first, counted per suite and GPU; the rows of page `page` of `per_page`
    (page_bounds: every failure and regression on the first) in full, or every row with no `per_page`.
    A page past the last shows no rows."""
    rows = case_heads(conn, filters)
    rows.sort(key=lambda r: (r.severity, r.suite, r.case_name, r.gpu_model, r.params_label))
    bounds = page_bounds(rows, per_page) if per_page else [(0, len(rows))]
    start, end = bounds[page - 1] if page <= len(bounds) else (len(rows), len(rows))
    fill_details(conn, rows[start:end], filters.branch)
    group_sizes: dict[Severity, int] = defaultdict(int)
    for r in rows:
        group_sizes[r.severity] += 1
    summaries: dict[tuple[str, str], SuiteSummary] = {}
    for r in rows:
        summary = summaries.get((r.suite, r.gpu_model))
        if summary is None:
            summary = summaries[(r.suite, r.gpu_model)] = SuiteSummary(r.suite, r.gpu_model)
        summary.counts[r.severity] += 1
    return Overview(
        rows=rows,
        summaries=sorted(summaries.values(), key=lambda s: (s.suite, s.gpu_model)),
        gpus=sorted({r.gpu_model for r in rows}),
        page=page,
        pages=len(bounds),
        start=start,
        end=end,
        group_sizes=dict(group_sizes),
    )

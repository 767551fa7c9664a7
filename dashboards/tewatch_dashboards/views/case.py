"""`/case/{id}`: one case's latest verdict, its series and its verdict history."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Connection

from tewatch.store.reads.case_reads import SeriesSummary, VerdictRow, case_facts, case_series, case_verdicts
from tewatch.store.reads.kernel_reads import CaseKernelRun, case_kernel_runs
from tewatch.store.reads.release_reads import SeriesStep, series_steps
from tewatch_dashboards.views.case_metrics import ErrorRow, MemoryRow, error_rows, memory_rows
from tewatch_dashboards.views.case_rows import CaseRow, case_rows
from tewatch_dashboards.views.filters import Filters


@dataclass(frozen=True)
class KernelLine:
    name: str
    calls_per_call: float
    seconds_per_call: float
    share: float  # of the call's kernel time


def kernel_lines(found: CaseKernelRun) -> list[KernelLine]:
    """The table's rows with each kernel's share of the call's device time."""
    total = found.table.total_seconds
    return [
        KernelLine(
            str(k["name"]),
            float(k["calls_per_call"]),
            float(k["total_seconds"]),
            float(k["total_seconds"]) / total if total else 0.0,
        )
        for k in found.table.kernels
    ]


@dataclass
class CaseDetail:
    row: CaseRow
    compute_capability: str
    labels: dict
    series: list[SeriesSummary]
    history: list[VerdictRow]
    steps: list[SeriesStep]  # its series in each release step, newest first per series
    memory: list[MemoryRow]
    errors: list[ErrorRow]
    kernels: CaseKernelRun | None  # its newest kernel table
    kernel_lines: list[KernelLine]

    @property
    def charted_errors(self) -> list[ErrorRow]:
        """The error metrics a check holds to a tolerance: drawn with it, to see a walk toward the limit."""
        return [e for e in self.errors if e.tolerance is not None]


def case_detail(conn: Connection, case_id: int, branch: str = "", history: int = 30) -> CaseDetail | None:
    case = case_facts(conn, case_id)
    if case is None:
        return None
    rows = case_rows(conn, Filters(branch=branch), case_id)
    if not rows:
        return None
    series = case_series(conn, case_id, branch)
    steps = series_steps(conn, [s.series_id for s in series])
    kernels = case_kernel_runs(conn, case_id, limit=1)
    return CaseDetail(
        row=rows[0],
        compute_capability=case.compute_capability,
        labels=case.labels or {},
        series=series,
        history=case_verdicts(conn, case_id, limit=history),
        steps=[s for s in steps if not branch or s.branch == branch],
        memory=memory_rows(conn, case_id, branch),
        errors=error_rows(conn, case_id, branch),
        kernels=kernels[0] if kernels else None,
        kernel_lines=kernel_lines(kernels[0]) if kernels else [],
    )

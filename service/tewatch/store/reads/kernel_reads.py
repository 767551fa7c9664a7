"""Cases' kernel tables (docs/kernels.md): a case's, newest run first, for the API and the case page; the
tables of some runs, and of a branch's earlier runs, for the kernel rules."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, func, select

from tewatch.store.schema.models import CaseKernels, Commit, Environment, Run


@dataclass(frozen=True)
class KernelTableRow:
    run_id: int
    case_id: int
    device: str
    profiled_calls: int
    launches_per_call: float | None
    syncs_per_call: float | None
    copies_per_call: float | None
    kernels: list[dict]  # {"name", "calls_per_call", "total_seconds", "mean_seconds"}, largest total first

    @property
    def total_seconds(self) -> float:
        """Every kernel's device time in one case call."""
        return sum(float(k.get("total_seconds") or 0.0) for k in self.kernels)


@dataclass(frozen=True)
class CaseKernelRun:
    """A case's kernel table with the run it was measured in."""

    table: KernelTableRow
    commit_sha: str
    te_version: str
    branch: str | None
    pr_number: int | None
    at: datetime | None


_TABLE = (
    CaseKernels.run_id,
    CaseKernels.case_id,
    CaseKernels.device,
    CaseKernels.profiled_calls,
    CaseKernels.launches_per_call,
    CaseKernels.syncs_per_call,
    CaseKernels.copies_per_call,
    CaseKernels.kernels,
)


def _table(row: Sequence) -> KernelTableRow:
    run_id, case_id, device, calls, launches, syncs, copies, kernels = row[:8]
    return KernelTableRow(run_id, case_id, device, calls, launches, syncs, copies, list(kernels or []))


def case_kernel_count(conn: Connection, case_id: int) -> int:
    return conn.scalar(select(func.count()).where(CaseKernels.case_id == case_id)) or 0


def case_kernel_runs(conn: Connection, case_id: int, *, limit: int, offset: int = 0) -> list[CaseKernelRun]:
    """The case's kernel tables, newest run first."""
    statement = (
        select(*_TABLE, Commit.sha, Environment.te_version, Run.branch, Run.pr_number, Run.started_at)
        .join(Run, Run.id == CaseKernels.run_id)
        .join(Commit, Commit.id == Run.commit_id)
        .join(Environment, Environment.id == Run.environment_id)
        .where(CaseKernels.case_id == case_id)
        .order_by(CaseKernels.run_id.desc())
        .limit(limit)
        .offset(offset)
    )
    return [CaseKernelRun(_table(row), *row[8:]) for row in conn.execute(statement)]


def run_kernel_tables(conn: Connection, run_ids: Sequence[int]) -> list[KernelTableRow]:
    """Every case's kernel table in these runs, in run order."""
    if not run_ids:
        return []
    statement = (
        select(*_TABLE)
        .where(CaseKernels.run_id.in_(list(run_ids)))
        .order_by(CaseKernels.run_id, CaseKernels.case_id)
    )
    return [_table(row) for row in conn.execute(statement)]


def earlier_kernel_tables(
    conn: Connection, case_ids: Sequence[int], branch: str, before_run_id: int, per_case: int
) -> dict[int, list[KernelTableRow]]:
    """Case id -> its kernel tables of the branch's runs before `before_run_id`, newest first, at most
    `per_case` each."""
    if not case_ids:
        return {}
    ranked = (
        select(
            *_TABLE,
            func.row_number()
            .over(partition_by=CaseKernels.case_id, order_by=CaseKernels.run_id.desc())
            .label("rank"),
        )
        .join(Run, Run.id == CaseKernels.run_id)
        .where(
            CaseKernels.case_id.in_(list(case_ids)),
            Run.branch == branch,
            Run.pr_number.is_(None),
            CaseKernels.run_id < before_run_id,
        )
        .subquery()
    )
    found: dict[int, list[KernelTableRow]] = {}
    rows = conn.execute(
        select(*ranked.c[: len(_TABLE)])
        .where(ranked.c.rank <= per_case)
        .order_by(ranked.c.case_id, ranked.c.run_id.desc())
    )
    for row in rows:
        found.setdefault(row[1], []).append(_table(row))
    return found

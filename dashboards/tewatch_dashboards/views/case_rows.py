"""A case as the case-wide pages show it: its latest verdict, its perf signal, its primary series' latest
value; read in brief for every case, in full for the cases a page shows."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from sqlalchemy import Connection

from tewatch.store.reads.case_reads import (
    CaseHead,
    VerdictRow,
    latest_case_verdicts,
    latest_values,
    primary_series,
    verdict_rows,
)
from tewatch.store.reads.detection_reads import perf_signals
from tewatch.store.reads.release_reads import RunRelease, failing_since, release_signals
from tewatch_dashboards.status import Severity, severity
from tewatch_dashboards.views.filters import Filters


@dataclass
class CaseRow:
    case_id: int
    case_name: str
    params: dict
    gpu_model: str
    backend: str | None
    recipe: str | None
    mode: str | None
    rank: int | None
    world_size: int | None
    labels: dict = field(default_factory=dict)
    machine: str = ""  # asv's machine name
    # the latest verdict in brief (every case) and in full (only the cases a page shows; see fill_details)
    verdict_id: int | None = None
    verdict_status: str | None = None
    verdict_check: str = ""
    exception_class: str | None = None
    message: str | None = None
    reason: str | None = None
    verdict: VerdictRow | None = None
    perf_signal: str | None = None
    perf_effect: float | None = None
    perf_release: str = ""  # "TE 2.19.0 → 2.20.2" where the signal is a release step's
    perf_series_id: int | None = None  # the series that changed most in that step
    failing_since: RunRelease | None = None  # the run where the failure began (failing cases a page shows)
    primary_series_id: int | None = None
    primary_unit: str = "seconds"
    latest_value: float | None = None

    @cached_property
    def suite(self) -> str:
        return self.case_name.split(".", 1)[0]

    @property
    def status(self) -> str | None:
        return self.verdict_status

    @property
    def severity(self) -> Severity:
        return severity(self.status, self.perf_signal)

    @cached_property
    def params_label(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in sorted(self.params.items()))

    def matches(self, needle: str) -> bool:
        haystack = [
            self.case_name,
            self.params_label,
            self.gpu_model,
            self.machine,
            self.status or "",
            self.verdict_check,
            self.exception_class or "",
            self.message or "",
        ]
        return needle in " ".join(haystack).lower()


def case_row(head: CaseHead) -> CaseRow:
    case, v = head.case, head.verdict
    return CaseRow(
        case_id=case.id,
        case_name=case.case_name,
        params=case.params or {},
        gpu_model=case.gpu_model,
        backend=case.backend,
        recipe=case.recipe,
        mode=case.mode,
        rank=case.rank,
        world_size=case.world_size,
        labels=case.labels or {},
        machine=case.machine,
        verdict_id=v.id if v else None,
        verdict_status=v.status.value if v else None,
        verdict_check=(v.check if v else "") or "",
        exception_class=v.exception_class if v else None,
        message=v.message if v else None,
        reason=v.reason if v else None,
    )


def latest_cases(conn: Connection, filters: Filters, case_id: int | None = None) -> list[CaseRow]:
    """Every case matching the filters (search aside) with its latest verdict in brief."""
    return [case_row(h) for h in latest_case_verdicts(conn, filters.selection(case_id), filters.branch)]


def add_perf_signals(conn: Connection, rows: list[CaseRow], branch: str = "") -> None:
    """Change-point detection's signal of each case, else what the newest release step changed."""
    signals = perf_signals(conn, [r.case_id for r in rows])
    steps = release_signals(conn, [r.case_id for r in rows if r.case_id not in signals], branch)
    for r in rows:
        signal = signals.get(r.case_id)
        if signal:
            r.perf_signal, r.perf_effect = signal.kind, signal.effect
        elif step := steps.get(r.case_id):
            r.perf_signal, r.perf_effect = step.kind, step.effect
            r.perf_release = f"TE {step.base_version} → {step.head_version}"
            r.perf_series_id = step.series_id


def case_heads(conn: Connection, filters: Filters, case_id: int | None = None) -> list[CaseRow]:
    """Every case matching the filters with its latest verdict in brief and its perf signal, so pages can
    sort and count thousands of cases and fill in only what they show."""
    rows = latest_cases(conn, filters, case_id)
    if filters.q:
        needle = filters.q.lower()
        rows = [r for r in rows if r.matches(needle)]
    add_perf_signals(conn, rows, filters.branch)
    return rows


def fill_details(conn: Connection, rows: list[CaseRow], branch: str) -> None:
    """The full latest verdict, the primary series and its latest value, for the rows a page shows."""
    verdicts = verdict_rows(conn, [r.verdict_id for r in rows if r.verdict_id is not None])
    for r in rows:
        r.verdict = verdicts.get(r.verdict_id) if r.verdict_id is not None else None
    since = failing_since(conn, [r.case_id for r in rows if r.severity == Severity.failure], branch)
    for r in rows:
        r.failing_since = since.get(r.case_id)
    fill_values(conn, rows, branch)


def fill_values(conn: Connection, rows: list[CaseRow], branch: str) -> None:
    """The primary series of each row and its latest value."""
    primaries = primary_series(conn, [r.case_id for r in rows])
    values = latest_values(conn, [p.series_id for p in primaries.values()], branch)
    for r in rows:
        primary = primaries.get(r.case_id)
        r.primary_series_id = primary.series_id if primary else None
        r.primary_unit = primary.unit if primary else "seconds"
        r.latest_value = values.get(r.primary_series_id) if r.primary_series_id else None


def case_rows(conn: Connection, filters: Filters, case_id: int | None = None) -> list[CaseRow]:
    """Every case matching the filters (or the one case `case_id`), in full."""
    rows = case_heads(conn, filters, case_id)
    fill_details(conn, rows, filters.branch)
    return rows

"""A pull request's kernels against its merge base's, judged by tewatch.detect.kernels (docs/kernels.md):
the Kernels section of its report. Reads each case's kernel table and graph break count in the head and
base runs, the head's share of the bytes-moved ceiling and its cases whose timed output was wrong; given
the timings the comparer found changed, attributes them to kernels, reports compile time, and sets apart
the speed-ups that are suspect."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from sqlalchemy import select
from sqlalchemy.orm import Session

from tewatch.core.metric_names import COMPILE_SECONDS, GRAPH_BREAKS, NOT_ATTRIBUTED, SHARE_OF_CEILING
from tewatch.detect.kernels import (
    Kernel,
    KernelSetChange,
    KernelTable,
    attribute,
    kernel_set_changes,
    learn_autotuned,
    suspect_speedup,
)
from tewatch.findings.pr_report import KernelFinding, KernelWhat, TimingChange
from tewatch.pipeline.correctness import FAILING
from tewatch.pipeline.history import SeriesInfo
from tewatch.pipeline.labels import case_label
from tewatch.store.reads.kernel_reads import KernelTableRow, run_kernel_tables
from tewatch.store.schema.models import Benchmark, Case, Result, ResultStatus, Series, Verdict

TIMED_OUTPUT = "timed_output"  # the check that the timed calls' output is right (docs/records.md)
REGRESSION, IMPROVEMENT = "regression", "improvement"


def kernel_table(row: KernelTableRow | None, graph_breaks: float | None) -> KernelTable:
    kernels = tuple(
        Kernel(str(k["name"]), float(k["calls_per_call"]), float(k["total_seconds"]))
        for k in (row.kernels if row else [])
    )
    if row is None:
        return KernelTable(kernels, graph_breaks=graph_breaks)
    return KernelTable(
        kernels, row.launches_per_call, row.syncs_per_call, row.copies_per_call, graph_breaks=graph_breaks
    )


@dataclass
class CaseKernels:
    """One head case's kernels: its table on the head and on each base run (oldest first)."""

    label: str
    head: KernelTable
    base: list[KernelTable] = field(default_factory=list)

    def changes(self) -> list[KernelSetChange]:
        if not self.base:
            return []
        return kernel_set_changes(self.base[-1], self.head, learn_autotuned(self.base))


@dataclass
class KernelEvidence:
    """Head case id -> its kernels, the head's share of the bytes-moved ceiling per case, and the head's
    cases whose timed output was wrong: what the report's Kernels section is made of besides the timings."""

    cases: dict[int, CaseKernels] = field(default_factory=dict)
    share_of_ceiling: dict[int, float] = field(default_factory=dict)
    wrong_output: set[int] = field(default_factory=set)


def metric_values(session: Session, run_ids: Sequence[int], metric: str) -> dict[tuple[int, int], float]:
    """(run id, case id) -> the value of the case's metric `metric` in that run."""
    if not run_ids:
        return {}
    query = (
        select(Result.run_id, Series.case_id, Result.value)
        .join(Series, Series.id == Result.series_id)
        .join(Benchmark, Benchmark.id == Series.benchmark_id)
        .where(
            Result.run_id.in_(list(run_ids)),
            Result.status == ResultStatus.ok,
            Benchmark.type == "metric",
            Benchmark.name.endswith(f".{metric}"),
        )
    )
    return {
        (run_id, case_id): value for run_id, case_id, value in session.execute(query) if value is not None
    }


def _head_cases(session: Session, base_case_ids: set[int], head_case_ids: set[int]) -> dict[int, int]:
    """Base case -> the head's case of the same group key (a case on another machine of its GPU model)."""
    rows = session.execute(select(Case.id, Case.group_key).where(Case.id.in_(base_case_ids | head_case_ids)))
    keys: dict[int, str] = {case_id: key or "" for case_id, key in rows}
    head_by_key = {keys[c]: c for c in head_case_ids if c in keys}
    return {c: c if c in head_case_ids else head_by_key.get(keys.get(c, ""), -1) for c in base_case_ids}


def wrong_output_cases(session: Session, run_id: int) -> set[int]:
    """The run's cases whose verdict is a failed `timed_output` check: the timed calls' output was wrong."""
    query = select(Verdict.case_id).where(
        Verdict.run_id == run_id, Verdict.check == TIMED_OUTPUT, Verdict.status.in_(FAILING)
    )
    return set(session.scalars(query))


def kernel_evidence(session: Session, head_run_id: int, base_run_ids: Sequence[int]) -> KernelEvidence:
    ceilings = {case: v for (_, case), v in metric_values(session, [head_run_id], SHARE_OF_CEILING).items()}
    evidence = KernelEvidence(
        share_of_ceiling=ceilings, wrong_output=wrong_output_cases(session, head_run_id)
    )
    conn = session.connection()
    runs = [head_run_id, *base_run_ids]
    tables = run_kernel_tables(conn, runs)
    breaks = metric_values(session, runs, GRAPH_BREAKS)
    head_tables = {t.case_id: t for t in tables if t.run_id == head_run_id}
    head_cases = set(head_tables) | {c for r, c in breaks if r == head_run_id}
    if not head_cases:
        return evidence
    base_cases = {t.case_id for t in tables if t.run_id != head_run_id} | {
        c for r, c in breaks if r != head_run_id
    }
    to_head = _head_cases(session, base_cases, head_cases)
    labels = {
        case.id: case_label(case) for case in session.scalars(select(Case).where(Case.id.in_(head_cases)))
    }
    for case_id in sorted(head_cases):
        evidence.cases[case_id] = CaseKernels(
            labels.get(case_id, str(case_id)),
            kernel_table(head_tables.get(case_id), breaks.get((head_run_id, case_id))),
        )
    base_tables = {(t.run_id, t.case_id): t for t in tables if t.run_id != head_run_id}
    for run_id in base_run_ids:
        for case_id in {c for r, c in (*base_tables, *breaks) if r == run_id}:
            head_case = to_head.get(case_id, -1)
            if head_case in evidence.cases:
                table = kernel_table(base_tables.get((run_id, case_id)), breaks.get((run_id, case_id)))
                evidence.cases[head_case].base.append(table)
    return evidence


@dataclass(frozen=True)
class ChangedTiming:
    """A timing the comparer found changed: the series, what it is, its verdict and its row."""

    series_id: int
    info: SeriesInfo
    verdict: str
    timing: TimingChange


def _metric_of(info: SeriesInfo) -> str:
    return info.benchmark.rpartition(".")[2]


def _set_rows(evidence: KernelEvidence) -> tuple[list[KernelFinding], set[int]]:
    """A row per case whose kernel set changed, then one per case whose graph breaks changed; the cases
    whose kernel list changed."""
    sets, breaks, changed = [], [], set()
    for case_id, case in evidence.cases.items():
        found = case.changes()
        kernels = [c for c in found if c.kind.value != GRAPH_BREAKS]
        if kernels:
            changed.add(case_id)
            sets.append(_case_row(case_id, case, "kernel set", "; ".join(c.describe() for c in kernels)))
        breaks += [
            _case_row(
                case_id, case, "graph breaks", c.describe(), REGRESSION if c.head > c.base else IMPROVEMENT
            )
            for c in found
            if c.kind.value == GRAPH_BREAKS
        ]
    return sets + breaks, changed


def _case_row(
    case_id: int, case: CaseKernels, what: KernelWhat, description: str, verdict: str = "changed"
) -> KernelFinding:
    return KernelFinding(
        benchmark=case.label, case_id=case_id, what=what, description=description, verdict=verdict
    )


def kernel_findings(
    evidence: KernelEvidence, changed: Sequence[ChangedTiming]
) -> tuple[list[KernelFinding], set[int]]:
    """The Kernels section, and the series it takes out of Regressions and Improvements (compile times,
    which it reports itself, and suspect speed-ups)."""
    rows, list_changed = _set_rows(evidence)
    compile_rows, suspects, attributions = [], [], []
    taken: set[int] = set()
    for found in changed:
        info, timing = found.info, found.timing
        metric = _metric_of(info)
        case = evidence.cases.get(info.case_id) if info.case_id is not None else None
        if metric == COMPILE_SECONDS:
            taken.add(found.series_id)
            base, head = timing.baseline, timing.head
            text = f"compile {base:.3g} s -> {head:.3g} s" if base is not None and head is not None else ""
            compile_rows.append(_timing_row(found, "compile time", text, found.verdict))
            continue
        if found.verdict == IMPROVEMENT and info.case_id is not None:
            ceiling = evidence.share_of_ceiling.get(info.case_id)
            wrong = info.case_id in evidence.wrong_output
            reason = suspect_speedup(info.case_id in list_changed, ceiling, wrong)
            if reason:
                taken.add(found.series_id)
                suspects.append(_timing_row(found, "suspect speed-up", f"faster, but {reason}", "suspect"))
                continue
        if info.unit != "seconds" or metric in NOT_ATTRIBUTED or case is None or not case.base:
            continue
        if timing.baseline is None or timing.head is None or not case.head.kernels:
            continue
        attribution = attribute(
            timing.head - timing.baseline, case.base[-1], case.head, learn_autotuned(case.base)
        )
        attributions.append(_timing_row(found, "attribution", attribution.describe(), found.verdict))
    return rows + compile_rows + suspects + attributions, taken


def _timing_row(found: ChangedTiming, what: KernelWhat, description: str, verdict: str) -> KernelFinding:
    return KernelFinding(
        benchmark=found.timing.benchmark,
        case_id=found.info.case_id,
        series_id=found.series_id,
        what=what,
        description=description,
        change=found.timing.effect,
        verdict=verdict,
    )

"""`/pr/{number}`: a pull request's performance verdicts, its failures against the merge base, its runs."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from sqlalchemy.orm import Session

from tewatch.pipeline.correctness import FAILING as REPORT_FAILING
from tewatch.pipeline.correctness import FixedCase, fixed_cases, is_new_failure, previous_verdicts
from tewatch.store.detection_reads import pr_verdicts as stored_pr_verdicts
from tewatch.store.models import Run
from tewatch.store.run_reads import run_verdicts
from tewatch.store.table_rows import CaseFacts, PrComparisonFacts, VerdictFacts


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


@dataclass(frozen=True)
class PrFailure:
    case: CaseFacts
    verdict: VerdictFacts
    base_status: str  # the case's verdict on the merge base, "" when the base has no such case


@dataclass
class PrFailures:
    """A pull request's failing verdicts, split the way its `pr.report` splits them: `new` are the report's
    correctness failures, `known` failed (or at least did not pass) on the merge base already; and `fixed`,
    the report's cases fixed by the pull request (failing on the merge base, passing on the head)."""

    new: list[PrFailure] = field(default_factory=list)
    known: list[PrFailure] = field(default_factory=list)
    fixed: list[FixedCase] = field(default_factory=list)


def pr_failures(session: Session, run_ids: Sequence[int]) -> PrFailures:
    """Failing verdicts of a pull request's head runs, each against its merge base as detection sees it
    (the report's `previous_verdicts` and `FAILING`), and the cases each run fixes (`fixed_cases`)."""
    out = PrFailures()
    for run_id in run_ids:
        run = session.get(Run, run_id)
        if run is None:
            continue
        before = previous_verdicts(session, run)
        out.fixed += fixed_cases(session, run, before)
        for found in run_verdicts(session.connection(), run_id, REPORT_FAILING):
            previous = before.get(found.case.id)
            failure = PrFailure(found.case, found.verdict, previous.value if previous else "")
            (out.new if is_new_failure(found.verdict.status, previous) else out.known).append(failure)
    return out

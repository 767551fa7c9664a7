"""What the GitHub integration reads from a `pr.report` event, and the commit status it sets for it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ValidationError

from tewatch.findings.pr_report import PrReportPayload

DESCRIPTION_CHARS = 140  # GitHub refuses longer commit status descriptions


class ReportError(ValueError):
    """An event body that is not a usable `pr.report`."""


class _Type(BaseModel):
    type: str


def event_type(body: bytes | str) -> str:
    """The event's `type`; "" for a body that names none."""
    try:
        return _Type.model_validate_json(body).type
    except ValidationError:
        return ""


class _Envelope(BaseModel):
    id: str
    created_at: str  # ISO 8601, UTC: orders two reports of one pull request and GPU
    data: PrReportPayload


@dataclass(frozen=True)
class PrReportEvent:
    event_id: str
    created_at: str
    report: PrReportPayload

    def cases(self, verdict: str) -> int:
        """Cases of this verdict (comparisons, in a report that counted no cases)."""
        return (self.report.case_counts or self.report.counts).get(verdict, 0)


def parse_report(body: bytes | str) -> PrReportEvent:
    try:
        envelope = _Envelope.model_validate_json(body)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise ReportError(f"not a pr.report event: {where}: {first['msg']}") from None
    return PrReportEvent(envelope.id, envelope.created_at, envelope.data)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def commit_state(event: PrReportEvent) -> tuple[Literal["success", "failure"], str]:
    """failure when the head brings a new correctness failure, a regression, a leak (a failed memory
    check) or a diverging training trajectory, success otherwise."""
    failures, regressions, improvements = (
        event.report.correctness_failures,
        event.cases("regression"),
        event.cases("improvement"),
    )
    leaks, divergences = event.report.memory_failures, event.report.training_divergences
    if failures or regressions or leaks or divergences:
        description = (
            f"{_count(failures, 'new correctness failure')}, "
            f"{_count(regressions, 'regression')} against the merge base"
        )
        if leaks:
            description += f"; {_count(leaks, 'leaking case')}"
        if divergences:
            description += f"; {_count(divergences, 'diverging training case')}"
        return "failure", description[:DESCRIPTION_CHARS]
    description = "no new correctness failure or regression"
    if improvements:
        description += f"; {_count(improvements, 'improvement')}"
    return "success", description[:DESCRIPTION_CHARS]


def status_context(prefix: str, event: PrReportEvent) -> str:
    """One status per GPU model: a pull request measured on two GPUs gets two."""
    return f"{prefix}/{event.report.gpu_model}"

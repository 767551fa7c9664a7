"""What the GitHub integration reads from a `pr.report` event, and the commit status it sets for it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ValidationError

from tewatch.findings.pr_report import PrReportPayload

DESCRIPTION_CHARS = 140  # GitHub refuses longer commit status descriptions


class ReportError(ValueError):
    """An event body that is not a usable `pr.report`."""


class _Envelope(BaseModel):
    id: str
    created_at: str  # ISO 8601, UTC: orders two reports of one pull request and GPU
    data: PrReportPayload


@dataclass(frozen=True)
class PrReportEvent:
    event_id: str
    created_at: str
    report: PrReportPayload

    @property
    def pr_number(self) -> int:
        return self.report.pr_number

    @property
    def repo(self) -> str:
        return self.report.repo

    @property
    def head_sha(self) -> str:
        return self.report.head_sha

    @property
    def gpu_model(self) -> str:
        return self.report.gpu_model

    @property
    def markdown(self) -> str:
        return self.report.markdown

    @property
    def pr_link(self) -> str:
        return self.report.links.pr

    @property
    def regressions(self) -> int:
        return (self.report.case_counts or self.report.counts).get("regression", 0)

    @property
    def improvements(self) -> int:
        return (self.report.case_counts or self.report.counts).get("improvement", 0)


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


def commit_state(report: PrReportEvent) -> tuple[Literal["success", "failure"], str]:
    """failure when the head brings a new correctness failure or a regression, success otherwise."""
    if report.report.correctness_failures or report.regressions:
        description = (
            f"{_count(report.report.correctness_failures, 'new correctness failure')}, "
            f"{_count(report.regressions, 'regression')} against the merge base"
        )
        return "failure", description[:DESCRIPTION_CHARS]
    description = "no new correctness failure or regression"
    if report.improvements:
        description += f"; {_count(report.improvements, 'improvement')}"
    return "success", description[:DESCRIPTION_CHARS]


def status_context(prefix: str, report: PrReportEvent) -> str:
    """One status per GPU model: a pull request measured on two GPUs gets two."""
    return f"{prefix}/{report.gpu_model}"

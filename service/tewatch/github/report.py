"""What the GitHub integration reads from a `pr.report` event, and the commit status it sets for it."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Literal

DESCRIPTION_CHARS = 140  # GitHub refuses longer commit status descriptions


class ReportError(ValueError):
    """An event body that is not a usable `pr.report`."""


@dataclass(frozen=True)
class PrReportEvent:
    event_id: str
    created_at: str  # ISO 8601, UTC: orders two reports of one pull request and GPU
    pr_number: int
    repo: str  # the repository the upload named (`tewatch upload --repo`), "" when it named none
    head_sha: str
    gpu_model: str
    markdown: str
    pr_link: str
    correctness_failures: int
    regressions: int
    improvements: int


def parse_report(body: bytes | str) -> PrReportEvent:
    try:
        envelope = json.loads(body)
        data = envelope["data"]
        counts = data.get("case_counts") or data.get("counts") or {}
        return PrReportEvent(
            event_id=str(envelope["id"]),
            created_at=str(envelope["created_at"]),
            pr_number=int(data["pr_number"]),
            repo=str(data.get("repo") or ""),
            head_sha=str(data["head_sha"]),
            gpu_model=str(data["gpu_model"]),
            markdown=str(data["markdown"]),
            pr_link=str(data["links"]["pr"]),
            correctness_failures=int(data.get("correctness_failures") or 0),
            regressions=int(counts.get("regression", 0)),
            improvements=int(counts.get("improvement", 0)),
        )
    except (ValueError, KeyError, TypeError) as exc:
        raise ReportError(f"not a pr.report event: {type(exc).__name__}: {exc}") from None


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def commit_state(report: PrReportEvent) -> tuple[Literal["success", "failure"], str]:
    """failure when the head brings a new correctness failure or a regression, success otherwise."""
    if report.correctness_failures or report.regressions:
        description = (
            f"{_count(report.correctness_failures, 'new correctness failure')}, "
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

"""What the GitHub integration reads from a `pr.report` event, and the commit status it sets for it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ValidationError

from tewatch.findings.headline import REGRESSION, headline
from tewatch.findings.pr_report import NEW_FAILURE, PrReportPayload

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


def parse_report(body: bytes | str) -> PrReportEvent:
    try:
        envelope = _Envelope.model_validate_json(body)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise ReportError(f"not a pr.report event: {where}: {first['msg']}") from None
    return PrReportEvent(envelope.id, envelope.created_at, envelope.data)


def commit_state(event: PrReportEvent) -> tuple[Literal["success", "failure"], str]:
    """failure when the headline counts a failure (tewatch.findings.headline: a new correctness failure, a
    regression, a leak, a diverging training case, new graph breaks), success otherwise; the description
    words the failures, else the headline's other findings."""
    said = headline(event.report)
    if said.failed:
        new, regressions = said.count(NEW_FAILURE.key), said.count(REGRESSION.key)
        description = (
            f"{new} new correctness failure{'' if new == 1 else 's'}, "
            f"{regressions} regression{'' if regressions == 1 else 's'} against the merge base"
        )
        others = [p.text for p in said.failures if p.key not in (NEW_FAILURE.key, REGRESSION.key)]
        description = "; ".join([description, *others])
        return "failure", description[:DESCRIPTION_CHARS]
    found = ", ".join(p.text for p in said.parts if p.count and p.tone in ("good", "note"))
    description = "no new correctness failure or regression" + (f"; {found}" if found else "")
    return "success", description[:DESCRIPTION_CHARS]


def status_context(prefix: str, event: PrReportEvent) -> str:
    """One status per GPU model: a pull request measured on two GPUs gets two."""
    return f"{prefix}/{event.report.gpu_model}"

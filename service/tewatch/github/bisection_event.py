"""What the GitHub integration reads from a `bisection.finished` event: the line for the comment of the
pull request whose alert the bisection answered."""

from __future__ import annotations

from pydantic import BaseModel, ValidationError

from tewatch.github.report import ReportError


class BisectionFinished(BaseModel):
    bisection_id: int
    pr_number: int | None = None  # None: the alert is on a branch, or no alert is linked
    markdown: str


class _Envelope(BaseModel):
    data: BisectionFinished


def parse_bisection(body: bytes | str) -> BisectionFinished:
    try:
        return _Envelope.model_validate_json(body).data
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise ReportError(f"not a bisection.finished event: {where}: {first['msg']}") from None

"""How a case's state reads on the pages: one severity order, one colour class per state."""

from __future__ import annotations

from enum import IntEnum

from tewatch.core.statuses import FAILING_STATUSES as FAILURE_STATUSES


class Severity(IntEnum):
    """Order of the overview: correctness failures first, unsupported (a capability gate) last."""

    failure = 0
    regression = 1
    improvement = 2
    passed = 3
    unknown = 4
    unsupported = 5


def severity(verdict_status: str | None, perf_signal: str | None) -> Severity:
    if verdict_status in FAILURE_STATUSES:
        return Severity.failure
    if verdict_status == "unsupported":
        return Severity.unsupported
    if perf_signal == "regression":
        return Severity.regression
    if perf_signal == "improvement":
        return Severity.improvement
    if verdict_status == "pass":
        return Severity.passed
    return Severity.unknown


def css_class(state: str | None) -> str:
    """The badge/cell class for a verdict status or a perf signal."""
    if state in FAILURE_STATUSES:
        return "st-fail"
    return {
        "pass": "st-pass",
        "unsupported": "st-unsupported",
        "regression": "st-regression",
        "improvement": "st-improvement",
        "suspect": "st-note",  # a speed-up the report does not believe
        "inconclusive": "st-neutral",
        "unchanged": "st-pass",
        "equal": "st-pass",  # a training trajectory against its reference
        "within": "st-pass",
        "diverged": "st-fail",
    }.get(state or "", "st-neutral")

"""How the overview splits its cases into pages: every failure and regression on the first."""

from __future__ import annotations

from types import SimpleNamespace

from tewatch_dashboards.status import Severity
from tewatch_dashboards.views.overview import page_bounds


def cases(*counts: tuple[Severity, int]) -> list[SimpleNamespace]:
    return [SimpleNamespace(severity=severity) for severity, n in counts for _ in range(n)]


def test_the_first_page_fills_up_after_the_failures_and_the_rest_come_in_equal_pages() -> None:
    rows = cases((Severity.failure, 18), (Severity.passed, 189), (Severity.unsupported, 73))
    assert page_bounds(rows, 50) == [(0, 50), (50, 100), (100, 150), (150, 200), (200, 250), (250, 280)]


def test_every_failure_and_regression_is_on_the_first_page_however_many() -> None:
    rows = cases(
        (Severity.failure, 70), (Severity.regression, 5), (Severity.improvement, 3), (Severity.passed, 60)
    )
    assert page_bounds(rows, 50) == [(0, 75), (75, 125), (125, 138)]


def test_few_or_no_cases_are_one_page() -> None:
    assert page_bounds(cases((Severity.passed, 7)), 50) == [(0, 7)]
    assert page_bounds([], 50) == [(0, 0)]

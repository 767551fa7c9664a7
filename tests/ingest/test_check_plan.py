"""check_plan refuses, naming table, column and row, a planned value its column cannot keep."""

from __future__ import annotations

import pytest

from tests.uploads import bundle_of, tiny_run
from tewatch.ingest.errors import IngestError
from tewatch.ingest.plan import build_plan
from tewatch.ingest.storable import check_plan


def _plan():
    return build_plan(bundle_of(tiny_run(0), branch="main"))


def test_a_plan_of_storable_values_passes():
    check_plan(_plan())


@pytest.mark.parametrize(
    ("field", "value", "words"),
    [
        ("message", "bad \x00 text", "NUL"),
        ("metric_value", float("nan"), "not a finite number"),
        ("extra_checks", [{"value": float("inf")}], "not a finite number"),
        ("check", "x" * 101, "at most 100"),
    ],
)
def test_a_verdict_value_no_column_keeps_is_refused_by_row(field, value, words):
    plan = _plan()
    plan.verdicts[1] = plan.verdicts[1]._replace(**{field: value})
    with pytest.raises(IngestError) as refused:
        check_plan(plan)
    case = plan.cases[plan.verdicts[1].case_fingerprint]
    assert f"verdicts.{field} of the verdict of {case.case_name!r}" in refused.value.message
    assert words in refused.value.message and refused.value.field == field


def test_a_case_label_no_column_keeps_is_refused_by_case():
    plan = _plan()
    case = list(plan.cases.values())[-1]
    case.labels = {**case.labels, "recipe": "r" * 65}
    with pytest.raises(IngestError) as refused:
        check_plan(plan)
    assert f"cases.recipe of the case {case.case_name!r}" in refused.value.message
    assert refused.value.field == "recipe"

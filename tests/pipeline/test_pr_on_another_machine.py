"""A pull request measured on another machine of the merge base's GPU model: the machines' cases are apart
(one series each), and the comparison still reads the merge base's runs, through the cases' machine group."""

from __future__ import annotations

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from tests.detect.store_history import StoreHistory, gemm_case, h200
from tewatch.pipeline.detection import detect_after_upload
from tewatch.store.schema.alert_models import PrComparison
from tewatch.store.schema.models import Series, VerdictStatus


def _on_another_machine(history: StoreHistory, group_key: str) -> None:
    """The history's case and series on a second H200 named `h200-b`; later runs are measured there."""
    history.case.group_key, history.case.machine = group_key, "h200"
    other = h200(digest="m-b", name="h200-b")
    case = gemm_case(fingerprint="case-gemm-b", group_key=group_key, machine="h200-b")
    history.case, history.series = (
        case,
        Series(fingerprint="series-gemm-b", case=case, benchmark=history.benchmark),
    )
    history.machines["580.1"] = other
    history.session.add_all([other, history.series])
    history.session.flush()


@pytest.mark.parametrize(("group_key", "compared"), [("gemm-on-h200", 30), ("another-group", 0)])
def test_a_pull_request_on_another_machine_is_compared_with_the_merge_base(engine, group_key, compared):
    with Session(engine) as session, session.begin():
        history = StoreHistory(session)
        history.add_run("a" * 40, 1e-3, VerdictStatus.passed)
        _on_another_machine(history, "gemm-on-h200")
        if group_key != "gemm-on-h200":  # a different case: nothing of the merge base's is its
            history.case.group_key = group_key
        head_id = history.add_run("f" * 40, 1.3e-3, VerdictStatus.passed, pr_number=9, merge_base="a" * 40).id
    detect_after_upload(engine, head_id, "https://tewatch.example")
    with Session(engine) as session:
        [comparison] = session.scalars(select(PrComparison)).all()
        series_of_head = session.scalar(select(Series.id).where(Series.fingerprint == "series-gemm-b"))
    assert comparison.series_id == series_of_head and comparison.n_base == compared
    if compared:
        assert comparison.verdict == "regression" and comparison.effect == pytest.approx(0.3, abs=0.03)

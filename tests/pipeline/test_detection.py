"""Detection against a real store (SQLite and PostgreSQL): change points, correctness, pull requests."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from tests.detect.store_history import StoreHistory
from tewatch.alerts.subscriptions import add_subscription
from tewatch.pipeline.branch_detection import detect_branch
from tewatch.pipeline.correctness import fixed_cases
from tewatch.pipeline.detection import detect_after_upload
from tewatch.store.engine.database import make_engine
from tewatch.store.reads.table_rows import CaseFacts, VerdictFacts
from tewatch.store.schema.alert_models import (
    Alert,
    AlertKind,
    AlertStatus,
    Detection,
    PrComparison,
    WebhookDelivery,
    WebhookEvent,
)
from tewatch.store.schema.models import Run, VerdictStatus

URL = "https://tewatch.example"


@pytest.fixture
def engine(db_url):
    engine = make_engine(db_url)
    with Session(engine) as session, session.begin():
        add_subscription(
            session,
            "http://127.0.0.1:9/hook",
            "a-secret-of-enough-length",
            ["regression.detected", "correctness.failed", "pr.report"],
            allow_loopback=True,
        )
    yield engine
    engine.dispose()


def events(engine, event_type: str) -> list[dict]:
    with Session(engine) as session:
        bodies = session.scalars(select(WebhookEvent.body).where(WebhookEvent.type == event_type)).all()
    return [json.loads(b)["data"] for b in bodies]


def test_a_step_on_main_becomes_one_detection_one_alert_and_one_event(engine):
    with Session(engine) as session, session.begin():
        history = StoreHistory(session)
        for i in range(60):
            history.add_run(f"{i:040x}", 1e-3 * (1.10 if i >= 40 else 1.0), VerdictStatus.passed)
    summary = detect_branch(engine, "main", URL)
    assert (summary.change_points, summary.new_regressions, summary.events) == (1, 1, 1)
    assert detect_branch(engine, "main", URL).change_points == 0  # idempotent
    with Session(engine) as session:
        [detection] = session.scalars(select(Detection)).all()
        [alert] = session.scalars(select(Alert)).all()
        deliveries = session.scalars(select(WebhookDelivery)).all()
    assert detection.direction == "regression" and detection.effect == pytest.approx(0.10, abs=0.02)
    assert detection.lower_limit < detection.baseline < detection.upper_limit < detection.level_after
    assert detection.detector_version and not detection.environment_shift
    assert alert.kind == AlertKind.regression and alert.status == AlertStatus.open and alert.series_id
    [payload] = events(engine, "regression.detected")
    assert payload["commit"] == f"{40:040x}" and payload["links"]["series"].startswith(URL + "/series/")
    assert len(deliveries) == 1


def test_a_shift_at_a_driver_upgrade_is_labelled_an_environment_shift(engine):
    with Session(engine) as session, session.begin():
        history = StoreHistory(session)
        for i in range(60):
            history.add_run(
                f"{i:040x}",
                1e-3 * (0.9 if i >= 30 else 1.0),
                VerdictStatus.passed,
                driver="590.2" if i >= 30 else "580.1",
            )
    detect_branch(engine, "main", URL)
    with Session(engine) as session:
        [detection] = session.scalars(select(Detection)).all()
    assert detection.direction == "improvement" and detection.environment_shift
    assert detection.environment_changes == {"driver": ["580.1", "590.2"]}


def test_correctness_alert_when_a_case_leaves_pass_and_resolution_when_it_returns(engine):
    with Session(engine) as session, session.begin():
        history = StoreHistory(session)
        ids = [
            history.add_run(f"{i:040x}", 1e-3, status).id
            for i, status in enumerate(
                [VerdictStatus.passed] * 3 + [VerdictStatus.error] * 2 + [VerdictStatus.passed]
            )
        ]
    assert detect_after_upload(engine, ids[3], URL).correctness_alerts == 1
    assert detect_after_upload(engine, ids[4], URL).correctness_alerts == 0  # still failing: same alert
    assert detect_after_upload(engine, ids[5], URL).resolved_alerts == 1
    with Session(engine) as session:
        [alert] = session.scalars(select(Alert)).all()
        assert alert.kind == AlertKind.correctness and alert.status == AlertStatus.resolved
        assert [c.to_status for c in alert.status_changes] == ["open", "resolved"]
        # the resolution names the commit that fixed it, in the history and in the alert
        assert alert.details["fixed_by_commit"] == f"{5:040x}" and alert.details["fixed_by_run"] == ids[5]
        assert alert.details["status"] == "error"  # what it was opened for is kept
        assert f"{5:040x}" in alert.status_changes[-1].note
    [payload] = events(engine, "correctness.failed")
    assert payload["previous"] == "pass" and payload["status"] == "error"


def test_a_failing_run_of_an_older_commit_opens_no_second_alert_for_a_case_with_one_open(engine):
    with Session(engine, expire_on_commit=False) as session, session.begin():
        history = StoreHistory(session)
        newest = history.add_run(f"{9:040x}", 1e-3, VerdictStatus.error, at=9).id
    assert detect_after_upload(engine, newest, URL).correctness_alerts == 1
    with Session(engine) as session, session.begin():
        history.session = session  # the history's machines, case and series, stored already
        backfilled = history.add_run(f"{1:040x}", 1e-3, VerdictStatus.error, at=1).id
    # nothing on main before the older commit, so its failure is new there: the case's alert is still open
    assert detect_after_upload(engine, backfilled, URL).correctness_alerts == 0
    with Session(engine) as session:
        [alert] = session.scalars(select(Alert)).all()
    assert alert.run_id == newest and alert.status == AlertStatus.open
    assert len(events(engine, "correctness.failed")) == 1


def _slower_pull_request(engine, status: VerdictStatus, pr_number: int) -> int:
    """30 runs of main, then a pull-request run 20 % slower on the newest of them; its run id."""
    with Session(engine) as session, session.begin():
        history = StoreHistory(session)
        for i in range(30):
            history.add_run(f"{i:040x}", 1e-3, VerdictStatus.passed)
        return history.add_run("f" * 40, 1.2e-3, status, pr_number=pr_number, merge_base=f"{29:040x}").id


def test_pull_request_against_merge_base_on_samples(engine):
    head_id = _slower_pull_request(engine, VerdictStatus.error, 3626)
    summary = detect_after_upload(engine, head_id, URL)
    assert summary.comparisons == {"regression": 1} and summary.correctness_alerts == 1
    with Session(engine) as session:
        [comparison] = session.scalars(select(PrComparison)).all()
        kinds = sorted(a.kind.value for a in session.scalars(select(Alert)))
    assert comparison.verdict == "regression" and comparison.ci_low < comparison.effect < comparison.ci_high
    assert comparison.effect == pytest.approx(0.2, abs=0.03) and comparison.n_base == 30
    assert kinds == ["correctness", "regression"]
    [report] = events(engine, "pr.report")
    markdown = report["markdown"]
    assert markdown.index("### Correctness") < markdown.index("### Largest regressions")
    assert "gemm.Gemm.time(recipe=nvfp4)" in markdown and f"{URL}/pr/3626" in markdown


def test_detecting_a_pull_request_run_again_rewrites_its_comparison(engine):
    head_id = _slower_pull_request(engine, VerdictStatus.passed, 7)
    first = detect_after_upload(engine, head_id, URL)
    again = detect_after_upload(engine, head_id, URL)
    assert first.comparisons == again.comparisons == {"regression": 1}
    with Session(engine) as session:
        [comparison] = session.scalars(select(PrComparison)).all()
        [alert] = session.scalars(select(Alert).where(Alert.kind == AlertKind.regression)).all()
    assert alert.comparison_id == comparison.id and comparison.verdict == "regression"
    assert len(events(engine, "pr.report")) == 2


def test_pull_request_is_compared_with_the_merge_base_on_its_own_machine_where_there_is_one(engine):
    # the merge base ran on two machines that sit 20 % apart; the PR ran on the slower one, unchanged
    with Session(engine) as session, session.begin():
        history = StoreHistory(session)
        history.add_run("a" * 40, 1e-3, VerdictStatus.passed, driver="580.1")
        history.add_run("a" * 40, 1.2e-3, VerdictStatus.passed, driver="590.2")
        head_id = history.add_run(
            "f" * 40, 1.2e-3, VerdictStatus.passed, driver="590.2", pr_number=7, merge_base="a" * 40
        ).id
    assert detect_after_upload(engine, head_id, URL).comparisons == {"inconclusive": 1}
    with Session(engine) as session:
        [comparison] = session.scalars(select(PrComparison)).all()
    assert comparison.n_base == 30 and comparison.effect == pytest.approx(0.0, abs=0.01)


def test_a_pull_request_that_makes_a_failing_case_pass_reports_it_as_fixed(engine):
    with Session(engine) as session, session.begin():
        history = StoreHistory(session)
        first = history.add_run(f"{0:040x}", 1e-3, VerdictStatus.passed).id
        ids = [history.add_run(f"{i:040x}", 1e-3, VerdictStatus.error).id for i in range(1, 30)]
        head_id = history.add_run(
            "f" * 40, 1e-3, VerdictStatus.passed, pr_number=3700, merge_base=f"{29:040x}"
        ).id
        case_id = history.case.id
    assert detect_after_upload(engine, first, URL).correctness_alerts == 0
    assert detect_after_upload(engine, ids[0], URL).correctness_alerts == 1  # open on main
    summary = detect_after_upload(engine, head_id, URL)
    assert summary.correctness_alerts == 0 and summary.resolved_alerts == 0
    with Session(engine) as session:
        [alert] = session.scalars(select(Alert)).all()
    assert alert.status == AlertStatus.open  # the fix is not on main yet

    [report] = events(engine, "pr.report")
    assert report["correctness_failures"] == 0 and report["counts"] == {"unchanged": 1}
    [fixed] = report["fixed"]
    assert fixed["case"] == "gemm.Gemm(recipe=nvfp4)" and fixed["case_id"] == case_id
    assert fixed["gpu_model"] == "NVIDIA H200" and fixed["previous"] == "error" and fixed["status"] == "pass"
    assert (
        fixed["exception_class"] == "RuntimeError" and fixed["message"] == "shape '[2, 2, 1024]' is invalid"
    )
    assert fixed["previous_detail"] == "compiled_vs_eager: RuntimeError: shape '[2, 2, 1024]' is invalid"
    assert fixed["base_run_id"] == ids[-1] and fixed["open_alert_ids"] == [alert.id]
    assert fixed["links"]["case"] == f"{URL}/case/{case_id}"
    markdown = report["markdown"]
    assert "### Fixed by this pull request" in markdown and "No correctness failure" not in markdown
    assert f"({URL}/case/{case_id})" in markdown and "RuntimeError: shape" in markdown
    with Session(engine) as session:
        head = session.get(Run, head_id)
        assert head is not None
        [row] = fixed_cases(session, head)
    assert (type(row.case), type(row.verdict), type(row.base)) == (CaseFacts, VerdictFacts, VerdictFacts)
    assert (row.case.id, row.verdict.run_id, row.base.run_id) == (case_id, head_id, ids[-1])


def test_a_pull_request_that_fixes_nothing_has_an_empty_fixed_list(engine):
    with Session(engine) as session, session.begin():
        history = StoreHistory(session)
        history.add_run("a" * 40, 1e-3, VerdictStatus.passed)
        still = history.add_run("f" * 40, 1e-3, VerdictStatus.error, pr_number=8, merge_base="a" * 40).id
    detect_after_upload(engine, still, URL)
    [report] = events(engine, "pr.report")
    assert report["fixed"] == [] and "### Fixed" not in report["markdown"]

"""Training trajectories through the pipeline (SQLite and PostgreSQL): uploads of a real PyTorch loop's
trajectories on main learn the band from identical code; a trajectory that parts from its reference opens a
correctness alert naming the step; a pull request's report gets a Training section with head against base,
and its headline, comment and commit status say that training diverged."""

from __future__ import annotations

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from tests.training.conftest import PR_NUMBER, upload_history
from tewatch.findings.headline import headline
from tewatch.github.report import commit_state, parse_report
from tewatch.pipeline.pr_report import stored_pr_report
from tewatch.store.engine.database import make_engine
from tewatch.store.schema.alert_models import WebhookEvent
from tewatch.store.schema.models import Run


@pytest.fixture(scope="module")
def api(in_process_app):
    return in_process_app


@pytest.fixture(scope="module")
def uploaded(api, trained) -> dict[str, int]:
    with api.client() as client:
        return upload_history(client, trained)


def _training_alerts(api) -> list[dict]:
    with api.client() as client:
        alerts = client.get("/api/v1/alerts", params={"kind": "correctness", "status": "open"}).json()
    return [a for a in alerts if "training.TrainSteps" in a["title"]]


def test_identical_code_opens_nothing_and_a_divergence_on_main_opens_one_alert_naming_the_step(api, uploaded):
    (alert,) = _training_alerts(api)
    assert alert["run_id"] == uploaded["broken"] and alert["branch"] == "main"
    assert "execution=compiled" in alert["title"] and "recipe=fp32" in alert["title"]
    assert alert["title"].endswith("loss parts from eager at step 6")
    assert alert["details"]["first_divergent_step"] == 6 and alert["details"]["status"] == "diverged"


def test_the_report_of_a_pull_request_has_a_training_row_per_case_head_against_base(api, uploaded):
    engine = make_engine(api.db_url)
    try:
        with Session(engine) as session:
            report = stored_pr_report(session, session.get_one(Run, uploaded["head"]))
            base_run = session.scalar(select(Run).where(Run.id == uploaded["aa"]))
            assert base_run is not None
    finally:
        engine.dispose()
    rows = {(r.recipe, r.execution): r for r in report.training}
    assert set(rows) == {("fp32", "eager"), ("fp32", "compiled"), ("bf16", "eager")}
    eager = rows[("fp32", "eager")]
    assert report.training_divergences == 2  # fp32 eager against the base, compiled against eager
    assert report.training[-1] is rows[("bf16", "eager")]  # diverged first
    assert eager.base_verdict == "diverged" and eager.base_first_divergent_step == 6
    assert eager.base_description.startswith("parts from the base at step 6 (")
    assert eager.verdict == "within" and eager.reference == "bf16 eager"  # fp32 against bf16: 5 % band
    assert eager.step_seconds is not None and eager.peak_bytes == 2**20
    assert rows[("fp32", "compiled")].verdict == "diverged"  # the head's compiled trains like the base
    assert rows[("fp32", "compiled")].base_verdict == "equal"
    assert rows[("bf16", "eager")].verdict == "" and rows[("bf16", "eager")].base_verdict == "equal"
    assert report.links.pr.endswith("/pr/35")


def test_the_pr_reports_headline_comment_and_status_say_training_diverged(api, uploaded):
    engine = make_engine(api.db_url)
    try:
        with Session(engine) as session:
            bodies = session.scalars(select(WebhookEvent.body).where(WebhookEvent.type == "pr.report")).all()
    finally:
        engine.dispose()
    [event] = [e for e in map(parse_report, bodies) if e.report.pr_number == PR_NUMBER]
    said = headline(event.report)
    assert said.count("divergences") == 2 and not said.quiet
    assert "2 training cases diverging" in said.text
    assert f"**{said.text}**" in event.report.markdown
    assert "no timing change beyond the minimum effect" not in event.report.markdown
    state, description = commit_state(event)
    assert state == "failure" and "2 training cases diverging" in description

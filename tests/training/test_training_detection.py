"""Training trajectories through the pipeline (SQLite and PostgreSQL): uploads of a real PyTorch loop's
trajectories on main learn the band from identical code; a trajectory that parts from its reference opens a
correctness alert naming the step; a pull request's report gets a Training section with head against base."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from tests.training_runs import upload_parts
from tests.uploads import post_run
from tewatch.pipeline.pr_report import stored_pr_report
from tewatch.store.database import make_engine
from tewatch.store.models import Run

START = datetime(2026, 11, 20, tzinfo=UTC)
BASE_SHA, AA_SHA, BROKEN_SHA, HEAD_SHA = "1" * 40, "2" * 40, "3" * 40, "4" * 40


@pytest.fixture(scope="module")
def api(in_process_app):
    return in_process_app


@pytest.fixture(scope="module")
def uploaded(api, trained) -> dict[str, int]:
    """base and an A/A on main, a pull request whose fp32 eager is the perturbed head, then a main run
    whose compiled fp32 trains like the perturbed head."""
    base = [trained["fp32-eager"], trained["fp32-compiled"], trained["bf16-eager"]]
    aa = [trained["aa-fp32-eager"], trained["fp32-compiled"], trained["bf16-eager"]]
    broken_compiled = replace(trained["head-fp32-eager"], execution="compiled")
    broken = [trained["fp32-eager"], broken_compiled, trained["bf16-eager"]]
    head = [trained["head-fp32-eager"], trained["fp32-compiled"], trained["bf16-eager"]]
    ids = {}
    with api.client() as client:
        for i, (name, runs, sha, fields) in enumerate(
            [
                ("base", base, BASE_SHA, {"branch": "main"}),
                ("aa", aa, AA_SHA, {"branch": "main"}),
                ("head", head, HEAD_SHA, {"branch": "feature", "pr_number": "35", "merge_base_sha": AA_SHA}),
                ("broken", broken, BROKEN_SHA, {"branch": "main"}),
            ]
        ):
            answer = post_run(client, upload_parts(runs, sha, START + timedelta(hours=i)), **fields)
            assert answer.status_code == 201, answer.text
            ids[name] = answer.json()["run_id"]
    return ids


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

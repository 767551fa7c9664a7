"""The kept H200 training campaign (tests/fixtures/h200-training-ab) uploaded again through the service
(SQLite and PostgreSQL): the A/A arm and the base on main, two runs of identical code equal to the last
bit, teach a band of 0 at every step, so the head, whose last micro-batch's layer-norm weight gradient is
scaled, parts from the base at the first step whose bf16 loss moved; the head keeps every verdict and every
resume check."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from sqlalchemy.orm import Session

from tests.campaign.test_kept_h200_kernels import records
from tests.uploads import post_folder_run
from tewatch.detect.trajectory import Pairing, TrajectoryVerdict, compare_trajectories, learn_band
from tewatch.pipeline.pr_report import stored_pr_report
from tewatch.store.engine.database import make_engine
from tewatch.store.schema.models import Run

KEPT = Path(__file__).resolve().parents[1] / "fixtures" / "h200-training-ab"
BASE_SHA = "f7d8c16d14e12838378ca44617af2072e71c8508"  # the base's asv commit (results file name)
PR_NUMBER = 1
TRAINED = {  # (backend, execution, recipe) -> the first step whose loss the head changed (None: none)
    ("te", "eager", "bf16"): 22,
    ("te", "graphed", "bf16"): 22,
    ("te", "eager", "fp8-delayed"): 23,
    ("te", "eager", "fp8-current"): 30,
    ("te", "graphed", "fp8-current"): 30,
    ("te", "eager", "fp8-block"): None,
    ("torch", "eager", "bf16"): None,
}


def key(labels: dict) -> tuple[str, str, str]:
    return (str(labels["backend"]), str(labels["execution"]), str(labels["recipe"]))


@pytest.fixture(scope="module")
def uploaded(in_process_app) -> dict[str, int]:
    """Run ids: the A/A arm, then the base on main (the merge base's run and the one before it are the
    band's runs of identical code), then the head as pull request 1."""
    ids = {}
    with in_process_app.client() as client:
        for name, fields in [
            ("aa", {}),
            ("base", {}),
            ("head", {"branch": "perturbed", "pr_number": str(PR_NUMBER), "merge_base_sha": BASE_SHA}),
        ]:
            answer = post_folder_run(client, KEPT / f"{name}-results", **fields)
            assert answer.status_code == 201, answer.text
            ids[name] = answer.json()["run_id"]
    return ids


@pytest.fixture(scope="module")
def report(in_process_app, uploaded):
    engine = make_engine(in_process_app.db_url)
    try:
        with Session(engine) as session:
            return stored_pr_report(session, session.get_one(Run, uploaded["head"]))
    finally:
        engine.dispose()


def test_the_head_parts_from_the_base_where_its_bf16_loss_first_moved(report) -> None:
    rows = {
        (r.benchmark.split("backend=")[1].split(",")[0], r.execution, r.recipe): r for r in report.training
    }
    assert set(rows) == set(TRAINED)  # compiled: an error; nvfp4: unsupported on Hopper
    for case, step in TRAINED.items():
        row = rows[case]
        if step is None:
            assert (row.base_verdict, row.base_first_divergent_step) == ("equal", None), case
            assert row.base_description == "equal to the base at all 30 steps"
        else:
            assert (row.base_verdict, row.base_first_divergent_step) == ("diverged", step), case
            pattern = rf"parts from the base at step {step} \([+-][0-9.e-]+, band 0\); largest "
            assert re.match(pattern, row.base_description), row.base_description
    assert report.training_divergences == 5
    assert [r.base_verdict for r in report.training[:5]] == ["diverged"] * 5  # diverged first


def test_in_the_head_graphed_trains_as_eager_and_each_recipe_within_its_band_of_bf16(report) -> None:
    rows = {(r.execution, r.recipe): r for r in report.training if "backend=te" in r.benchmark}
    assert rows[("graphed", "bf16")].verdict == rows[("graphed", "fp8-current")].verdict == "equal"
    assert {rows[("eager", r)].verdict for r in ("fp8-delayed", "fp8-current", "fp8-block")} == {"within"}


def test_the_head_keeps_every_verdict_and_resume_check_of_identical_code(in_process_app, uploaded) -> None:
    """The verdicts the service keeps for the head and for main, whose latest run of each case is the A/A
    arm's (it started last); the base's records say the same."""
    with in_process_app.client() as client:
        main = client.get("/api/v1/verdicts/latest", params={"branch": "main"}).json()
        head = client.get("/api/v1/verdicts/latest", params={"branch": "perturbed"}).json()
    assert {v["run_id"] for v in main} == {uploaded["aa"]} and {v["run_id"] for v in head} == {
        uploaded["head"]
    }
    statuses = {v["case_id"]: v["status"] for v in main}
    assert {v["case_id"]: v["status"] for v in head} == statuses
    assert sorted(statuses.values()) == ["error"] + ["pass"] * 7 + ["unsupported"]
    base_records, head_records = records(KEPT / "base-results"), records(KEPT / "head-results")
    assert {k: r.verdict.status for k, r in base_records.items()} == {
        k: r.verdict.status for k, r in head_records.items()
    }
    (error,) = [v for v in head if v["status"] == "error"]
    assert (error["backend"], error["mode"], error["exception_class"]) == (
        "te",
        "compiled",
        "InternalTorchDynamoError",
    )
    assert "get_attention_backend" in error["message"] + (error["traceback_head"] or "")
    for verdicts in (main, head):
        resumes = [c for v in verdicts for c in v["extra_checks"] if c["check"] == "resume_vs_uninterrupted"]
        assert len(resumes) == 7
        assert {(c["metric"], c["value"], c["status"]) for c in resumes} == {
            ("max_abs_loss_diff", 0.0, "pass")
        }


def test_the_a_a_arm_equals_the_base_at_every_step_and_teaches_a_band_of_0() -> None:
    base, aa = records(KEPT / "base-results"), records(KEPT / "aa-results")
    trained = {label: r.trajectory for label, r in base.items() if r.trajectory is not None}
    assert len(trained) == len(TRAINED)
    for label, trajectory in trained.items():
        other = aa[label].trajectory
        assert other is not None and other.steps == trajectory.steps == 30
        band = learn_band([trajectory.loss, other.loss])
        assert band.deterministic and band.runs == 2
        found = compare_trajectories(Pairing.head_vs_base, trajectory.loss, other.loss, band)
        assert found.verdict is TrajectoryVerdict.equal, label
        assert other.grad_norm == trajectory.grad_norm, label


def test_with_one_base_run_the_noise_floor_hides_the_change() -> None:
    """As measured: the campaign's base was one run, so the band had the 0.002 relative floor, and the
    head stayed within it (the largest change, fp8-delayed's 0.00092 at step 30, is below 0.002 x loss)."""
    base, head = records(KEPT / "base-results"), records(KEPT / "head-results")
    for label, record in base.items():
        if record.trajectory is None:
            continue
        band = learn_band([record.trajectory.loss])
        moved = head[label].trajectory
        assert moved is not None and not band.deterministic
        found = compare_trajectories(Pairing.head_vs_base, record.trajectory.loss, moved.loss, band)
        assert found.verdict in (TrajectoryVerdict.within, TrajectoryVerdict.equal), label
    assert "**within**" in (KEPT / "pr-report-as-measured.md").read_text()

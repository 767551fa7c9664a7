"""A training case's trajectory is stored whole with its run and served as one answer; a malformed one is a
422 naming the file and field, and nothing of its upload is stored (SQLite and PostgreSQL)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from tests.training_runs import upload_parts
from tests.uploads import post_run
from tewatch.ingest.records import MAX_TRAJECTORY_STEPS

WHEN = datetime(2026, 11, 20, tzinfo=UTC)


@pytest.fixture(scope="module")
def api(in_process_app):
    return in_process_app


def _with_trajectory(parts: dict, change) -> dict:
    name, content = parts["cases"][0]
    record = json.loads(content)
    change(record["trajectory"])
    return {**parts, "cases": [(name, json.dumps(record).encode()), *parts["cases"][1:]]}


def test_a_trajectory_is_served_whole_as_uploaded(api, trained):
    runs = [trained["fp32-eager"], trained["bf16-eager"]]
    with api.client() as client:
        answer = post_run(client, upload_parts(runs, "a" * 40, WHEN), branch="main")
        assert answer.status_code == 201, answer.text
        run_id = answer.json()["run_id"]
        cases = client.get("/api/v1/cases", params={"case": "training.TrainSteps"}).json()["items"]
        by_recipe = {c["labels"]["recipe"]: c["id"] for c in cases if c["case_name"] == "training.TrainSteps"}
        served = client.get(f"/api/v1/runs/{run_id}/trajectories/{by_recipe['bf16']}")
        missing = client.get(f"/api/v1/runs/{run_id}/trajectories/{max(by_recipe.values()) + 1000}")
        benchmarks = {
            b["name"]: b
            for b in client.get("/api/v1/benchmarks", params={"case": "training.TrainSteps"}).json()
        }
        results = client.get(f"/api/v1/runs/{run_id}/results", params={"limit": 100}).json()["items"]
    [timed] = [
        r
        for r in results
        if r["benchmark"] == "training.TrainSteps.track_seconds" and r["case_id"] == by_recipe["bf16"]
    ]
    # asv's median of the warm steps `track_seconds` returned, every one of them kept, and the verdict
    assert timed["samples"] == trained["bf16-eager"].step_samples and timed["repeat"] == 11
    assert timed["value"] == pytest.approx(trained["bf16-eager"].step_seconds) and timed["verdict"] == "pass"
    throughput, step, timed = (
        benchmarks["training.TrainSteps.tokens_per_second"],
        benchmarks["training.TrainSteps.step_seconds"],
        benchmarks["training.TrainSteps.track_seconds"],
    )
    assert (throughput["unit"], throughput["higher_is_better"]) == ("tokens/s", True)
    assert (step["unit"], step["higher_is_better"]) == ("seconds", False)
    assert (timed["unit"], timed["higher_is_better"]) == ("seconds", False)
    assert served.status_code == 200
    body = served.json()
    assert body["loss"] == trained["bf16-eager"].loss and body["grad_norm"] == trained["bf16-eager"].grad_norm
    assert (body["steps"], body["micro_batches"], body["seed"]) == (12, 2, 1234)
    assert missing.status_code == 404 and "no trajectory" in missing.json()["detail"]


@pytest.mark.parametrize(
    ("change", "field", "words"),
    [
        (lambda t: t["loss"].pop(), "trajectory", "loss has 11 values for 12 steps"),
        (lambda t: t["grad_norm"].append(1.0), "trajectory", "grad_norm has 13 values for 12 steps"),
        (
            lambda t: t.update(steps=MAX_TRAJECTORY_STEPS + 1),
            "trajectory.steps",
            "less than or equal to 10000",
        ),
        (lambda t: t["loss"].__setitem__(3, "x"), "trajectory.loss.3", "a valid number"),
        (lambda t: t.update(tokens="many"), "trajectory.tokens", "unknown field"),
    ],
)
def test_a_malformed_trajectory_is_a_422_naming_file_and_field(api, trained, change, field, words):
    parts = _with_trajectory(upload_parts([trained["fp32-eager"]], "b" * 40, WHEN), change)
    before = api.counts()
    with api.client() as client:
        answer = post_run(client, parts, branch="main")
    assert answer.status_code == 422
    body = answer.json()
    assert body["file"].startswith("cases/training.TrainSteps") and body["field"] == field
    assert words in body["message"]
    assert api.counts() == before


def test_a_non_finite_loss_in_the_json_text_is_refused_and_null_is_kept(api, trained):
    parts = upload_parts([trained["fp32-eager"]], "c" * 40, WHEN)
    name, content = parts["cases"][0]
    nan = content.replace(b'"loss": [', b'"loss": [NaN, ', 1).replace(b'"steps": 12', b'"steps": 13', 1)
    with api.client() as client:
        refused = post_run(client, {**parts, "cases": [(name, nan)]}, branch="main")
        kept = post_run(
            client, _with_trajectory(parts, lambda t: t["loss"].__setitem__(0, None)), branch="main"
        )
    assert refused.status_code == 422 and refused.json()["field"] == "trajectory.loss.0"
    assert kept.status_code == 201

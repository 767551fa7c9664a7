"""Real asv results (tests/fixtures/*) uploaded to a real server on SQLite and PostgreSQL."""

from __future__ import annotations

import itertools
import json
import math

import pytest
from sqlalchemy import create_engine, text

from tests.conftest import FIXTURES
from tests.uploads import TINY, all_fixture_runs, parts_of, post_run, tiny_run
from tewatch.campaign.demo import load_results
from tewatch.runner import results as asv_results
from tewatch.store.engine.migrate import upgrade


def expected_rows(run) -> tuple[int, int]:
    """(result rows, NaN results) counted straight from the files with the runner's reader, not the
    service's parser. A NaN without a record in a run that has records is not a case (skip_params)."""
    data = json.loads(run.result.read_text())  # json accepts asv's bare NaN tokens
    recorded = {path.stem for path in run.cases}
    rows = nans = 0
    for case in asv_results.iter_case_results(data, json.loads(run.benchmarks.read_text())):
        nan = isinstance(case.value, float) and math.isnan(case.value)
        if nan and recorded and case.case_id not in recorded:
            continue
        rows += 1
        nans += nan
    for case_file in run.cases:
        rows += len(json.loads(case_file.read_text()).get("metrics", {}))
    return rows, nans


@pytest.mark.parametrize(
    "run", all_fixture_runs(), ids=lambda r: f"{r.result.parent.parent.parent.name}:{r.result.name[:8]}"
)
def test_every_fixture_run_is_stored_with_every_result(live_server, run):
    before = live_server.counts()
    with live_server.client() as client:
        answer = post_run(client, parts_of(run), branch="main", repo="NVIDIA/TransformerEngine")
    assert answer.status_code in (200, 201), answer.text
    body = answer.json()
    rows, nans = expected_rows(run)
    assert sum(body["results"].values()) == rows
    # asv's NaN (skipped) is stored as skipped or unsupported, never as a number
    assert body["results"].get("skipped", 0) + body["results"].get("unsupported", 0) >= nans
    if answer.status_code == 201:
        after = live_server.counts()
        assert after["results"] - before["results"] == rows
        assert after["runs"] - before["runs"] == 1
        assert after["verdicts"] - before["verdicts"] == sum(body["verdicts"].values())
    with live_server.client() as client:
        stored = client.get(f"/api/v1/runs/{body['run_id']}").json()
    roles = {f["role"] for f in stored["files"]}
    assert {"result", "machine", "benchmarks"} <= roles
    assert len([r for r in roles if r.startswith("cases/")]) == len(run.cases)


def test_tiny_suite_statuses_and_verdicts(live_server):
    run = tiny_run(0)
    with live_server.client() as client:
        body = post_run(client, parts_of(run), branch="main").json()
        verdicts = client.get("/api/v1/verdicts/latest", params={"branch": "main"}).json()
        series_page = client.get("/api/v1/cases", params={"case": "ops.Scale"}).json()
    by_case = {(v["case_name"], json.dumps(v["params"], sort_keys=True)): v for v in verdicts}
    assert body["results"] == {"ok": 7, "failed": 2, "timeout": 1, "unsupported": 4}
    compile_error = by_case[("ops.Compile", '{"mode": "default"}')]
    assert compile_error["status"] == "error"
    assert compile_error["exception_class"] == "RuntimeError"
    assert compile_error["message"] == "compile failed on 3D input"
    # no sidecar record: the verdict comes from asv's stderr
    unrecorded = by_case[("ops.time_fails_unrecorded", "{}")]
    assert (unrecorded["status"], unrecorded["exception_class"]) == ("error", "ValueError")
    assert "not a multiple of 16" in unrecorded["message"]
    assert "Traceback" in unrecorded["traceback_head"]
    assert by_case[("ops.time_too_slow", "{}")]["status"] == "timeout"
    unsupported = by_case[("ops.Scale", '{"backend": "te", "rank": 2}')]
    assert unsupported["status"] == "unsupported" and "10.0" in unsupported["reason"]
    assert unsupported["backend"] == "te" and unsupported["rank"] == 2
    accuracy = by_case[("ops.Scale", '{"backend": "torch-ref", "rank": 3}')]
    assert (accuracy["status"], accuracy["metric"], accuracy["metric_value"]) == (
        "fail_accuracy",
        "max_abs_err",
        0.125,
    )
    assert accuracy["extra_checks"] == [{"check": "cpu_round_trip", "status": "pass"}]
    # the derived metric of the sidecar is a series of its own
    benchmarks = {s["benchmark"] for case in series_page["items"] for s in case["series"]}
    assert "ops.Scale.share_of_ceiling" in benchmarks


def test_series_keeps_samples_and_quartiles(live_server):
    with live_server.client() as client:
        for index in (0, 1):
            post_run(client, parts_of(tiny_run(index)), branch="series-test")
        cases = client.get("/api/v1/cases", params={"case": "ops.Scale", "backend": "torch-ref"}).json()[
            "items"
        ]
        series_id = next(
            s["id"]
            for c in cases
            if c["params"]["rank"] == 2
            for s in c["series"]
            if s["benchmark"] == "ops.Scale.time_scale"
        )
        series = client.get(f"/api/v1/series/{series_id}", params={"branch": "series-test"}).json()
    raw = json.loads(tiny_run(0).result.read_text())["results"]["ops.Scale.time_scale"]
    first = series["points"][0]
    assert len(series["points"]) == 2
    assert first["samples"] == pytest.approx(raw[11][0])
    assert first["q_25"] == pytest.approx(raw[7][0]) and first["ci_99_b"] == pytest.approx(raw[6][0])
    assert first["verdict"] == "pass" and first["status"] == "ok"
    assert series["points"][0]["committed_at"] < series["points"][1]["committed_at"]


def test_fixture_loader_finds_the_tiny_suite():
    assert TINY in {r.result.parent.parent for r in all_fixture_runs()}
    assert len(list(itertools.islice(all_fixture_runs(), 2))) == 2


def test_a_combination_asv_skips_without_a_record_is_no_case_and_hides_no_later_labels(tmp_path):
    """The quick run's distributed suite skips world size 2 without sequence parallelism (skip_params);
    uploaded first, it must not create those cases label-less before the 2-GPU run records them."""
    url = f"sqlite:///{tmp_path / 'store.sqlite3'}"
    upgrade(url)
    load_results(url, FIXTURES / "h200-quick", "main")
    engine = create_engine(url)
    query = text(
        "SELECT count(*) FROM cases WHERE case_name = 'distributed.LinearTensorParallel' "
        "AND world_size = 2 AND json_extract(params, '$.sequence_parallel') = 0"
    )
    with engine.connect() as conn:
        assert conn.execute(query).scalar_one() == 0
    load_results(url, FIXTURES / "h200x2-distributed-compiled", "main")
    with engine.connect() as conn:
        ranks = conn.execute(
            text(
                "SELECT rank, labels FROM cases WHERE case_name = 'distributed.LinearTensorParallel' "
                "AND world_size = 2 AND json_extract(params, '$.sequence_parallel') = 0"
            )
        ).all()
    engine.dispose()
    assert len(ranks) == 8 and all(rank == 3 for rank, _ in ranks)

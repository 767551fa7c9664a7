"""What one upload may create is bounded: parameter lists whose product names tens of thousands of cases
are refused with 413, naming the limit, the count and the benchmark, and store nothing."""

from __future__ import annotations

import json
import time

import pytest

from tests.conftest import start_server, stop_server
from tests.uploads import bundle_of, parts_of, post_run, tiny_run
from tewatch.ingest.bounds import UploadBounds
from tewatch.ingest.errors import IngestError
from tewatch.ingest.plan import build_plan

BOMB = "bomb.Bomb.track_seconds"


def bomb_parts(*sizes: int) -> dict[str, list[tuple[str, bytes]]]:
    """The tiny upload plus one benchmark whose parameter lists have these sizes (a few KB in all)."""
    parts = parts_of(tiny_run(0))
    params = [[repr(f"{chr(97 + i)}{j}") for j in range(size)] for i, size in enumerate(sizes)]
    name, content = parts["result"][0]
    results = json.loads(content)
    results["results"][BOMB] = [None, params]
    parts["result"][0] = (name, json.dumps(results).encode())
    name, content = parts["benchmarks"][0]
    benchmarks = json.loads(content)
    benchmarks[BOMB] = {
        "name": BOMB,
        "param_names": [chr(97 + i) for i in range(len(sizes))],
        "params": params,
        "type": "track",
        "unit": "seconds",
        "version": "1",
    }
    parts["benchmarks"][0] = (name, json.dumps(benchmarks).encode())
    return parts


def test_two_lists_of_200_values_are_refused_naming_the_case_limit(live_server):
    parts = bomb_parts(200, 200)
    assert len(parts["result"][0][1]) < 10_000
    before = live_server.counts()
    with live_server.client() as client:
        answer = post_run(client, parts, branch="bomb")
    assert answer.status_code == 413, answer.text
    detail = answer.json()["detail"]
    assert (
        "40,0" in detail and "cases" in detail and "10,000" in detail and "TEWATCH_MAX_UPLOAD_CASES" in detail
    )
    assert live_server.counts() == before


def test_a_product_of_a_billion_is_refused_before_it_is_expanded(live_server):
    before = live_server.counts()
    start = time.monotonic()
    with live_server.client() as client:
        answer = post_run(client, bomb_parts(1000, 1000, 1000), branch="bomb")
    assert answer.status_code == 413, answer.text
    body = answer.json()
    assert body["file"] == "result" and body["field"] == f"results.{BOMB}.params"
    assert "1000 x 1000 x 1000" in body["detail"] and "50,000" in body["detail"]
    assert "TEWATCH_MAX_UPLOAD_RESULTS" in body["detail"]
    assert time.monotonic() - start < 60  # expanding 10^9 combinations would not end at all
    assert live_server.counts() == before


@pytest.mark.parametrize(
    "setting, word", [("TEWATCH_MAX_UPLOAD_RESULTS", "results"), ("TEWATCH_MAX_UPLOAD_CASES", "cases")]
)
def test_the_limits_are_settings(db_url, tmp_path, monkeypatch, setting, word):
    monkeypatch.setenv(setting, "3")
    monkeypatch.setenv("TEWATCH_WEBHOOK_WORKER", "false")
    server = start_server(db_url, tmp_path / "serve.log")
    try:
        before = server.counts()
        with server.client() as client:
            answer = post_run(client, parts_of(tiny_run(0)), branch="small")
        assert answer.status_code == 413, answer.text
        detail = answer.json()["detail"]
        assert f"at most 3 are accepted per upload ({setting})" in detail and word in detail
        assert server.counts() == before
    finally:
        stop_server(server)


def test_an_upload_at_the_bounds_is_accepted_and_one_past_them_is_not():
    bundle = bundle_of(tiny_run(0), branch="edge")
    plan = build_plan(bundle)
    exact = UploadBounds(results=len(plan.results), cases=len(plan.cases))
    assert len(build_plan(bundle, exact).results) == len(plan.results)
    for bounds, word in [
        (UploadBounds(len(plan.results) - 1, len(plan.cases)), "results"),
        (UploadBounds(len(plan.results), len(plan.cases) - 1), "cases"),
    ]:
        with pytest.raises(IngestError) as refused:
            build_plan(bundle, bounds)
        assert refused.value.status_code == 413 and word in refused.value.message

"""The read endpoints the dashboard and users rely on, over data from real asv runs."""

from __future__ import annotations

import pytest

from tests.service.uploads import parts_of, post_run, tiny_run


@pytest.fixture(scope="module")
def two_runs(live_server):
    with live_server.client() as client:
        ids = [
            post_run(client, parts_of(tiny_run(i)), branch="q", repo="acme/te").json()["run_id"]
            for i in (0, 1)
        ]
        pr = post_run(client, parts_of(tiny_run(1)), branch="feature", pr_number="42", merge_base_sha="abc")
    return ids, pr.json()["run_id"]


def test_runs_list_filters_and_pages(live_server, two_runs):
    (base, head), pr_run = two_runs
    with live_server.client(token=None) as client:
        page = client.get("/api/v1/runs", params={"branch": "q"}).json()
        assert [r["id"] for r in page["items"]] == [head, base] and page["total"] == 2
        assert client.get("/api/v1/runs", params={"pr": 42}).json()["items"][0]["id"] == pr_run
        one = client.get("/api/v1/runs", params={"branch": "q", "limit": 1, "offset": 1}).json()
        assert [r["id"] for r in one["items"]] == [base]
        assert client.get("/api/v1/runs", params={"gpu": "NVIDIA H200"}).json()["total"] == 0
        detail = client.get(f"/api/v1/runs/{base}").json()
        assert detail["machine"]["name"] == "tiny-cpu" and detail["environment"]["torch"] == "2.13.0+cpu"
        assert detail["summary"]["results"]["ok"] == 7
        assert client.get("/api/v1/runs/999999").status_code == 404


def test_commits_benchmarks_machines(live_server, two_runs):
    with live_server.client(token=None) as client:
        commits = client.get("/api/v1/commits", params={"repo": "acme/te"}).json()["items"]
        assert len(commits) == 2 and commits[0]["committed_at"] > commits[1]["committed_at"]
        benchmarks = {b["name"]: b for b in client.get("/api/v1/benchmarks").json()}
        assert benchmarks["ops.track_share"]["higher_is_better"] is True
        assert benchmarks["ops.Scale.time_scale"]["param_names"] == ["backend", "rank"]
        assert client.get("/api/v1/machines").json()[0]["gpu_model"] == "cpu"


def test_latest_verdicts_filter(live_server, two_runs):
    (_, head), pr_run = two_runs
    with live_server.client(token=None) as client:
        latest = client.get("/api/v1/verdicts/latest", params={"branch": "q"}).json()
        assert {v["run_id"] for v in latest} == {head}
        assert len(latest) == 8
        te = client.get("/api/v1/verdicts/latest", params={"backend": "te"}).json()
        assert {v["status"] for v in te} == {"unsupported"} and len(te) == 2
        errors = client.get("/api/v1/verdicts/latest", params={"status": "error"}).json()
        assert {v["case_name"] for v in errors} == {"ops.Compile", "ops.time_fails_unrecorded"}
        assert {v["run_id"] for v in client.get("/api/v1/verdicts/latest").json()} == {pr_run}


def test_compare_two_runs(live_server, two_runs):
    (base, head), _ = two_runs
    with live_server.client(token=None) as client:
        rows = client.get("/api/v1/compare", params={"base": base, "head": head}).json()["rows"]
        assert len(rows) == 14
        ok = [r for r in rows if r["base_status"] == "ok"]
        assert all(r["ratio"] == pytest.approx(r["head_value"] / r["base_value"]) for r in ok)
        assert client.get("/api/v1/compare", params={"base": base, "head": 999999}).status_code == 404


def test_series_downsampling_keeps_failures(live_server, two_runs):
    with live_server.client(token=None) as client:
        cases = client.get("/api/v1/cases", params={"case": "ops.Compile"}).json()["items"]
        failing = next(c for c in cases if c["params"] == {"mode": "default"})
        series = client.get(f"/api/v1/series/{failing['series'][0]['id']}", params={"max_points": 2}).json()
        assert all(p["status"] == "failed" and p["value"] is None for p in series["points"])
        assert (
            client.get(f"/api/v1/series/{failing['series'][0]['id']}", params={"samples": False}).status_code
            == 200
        )
        assert client.get("/api/v1/series/999999").status_code == 404


def test_health_metrics_and_docs(live_server, two_runs):
    with live_server.client(token=None) as client:
        health = client.get("/api/v1/health").json()
        assert health["status"] == "ok" and health["schema_revision"]
        metrics = client.get("/metrics").text
        assert "tewatch_uploads_total" in metrics and 'outcome="created"' in metrics
        assert client.get("/docs").status_code == 200
        assert "/api/v1/verdicts/latest" in client.get("/openapi.json").json()["paths"]

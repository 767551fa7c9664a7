"""The read endpoints the dashboard and users rely on, over data from real asv runs, called in process
(the live-server tests under tests/e2e/ cover the same app end to end)."""

from __future__ import annotations

import json

import pytest

from tests.uploads import parts_of, post_run, tiny_run


@pytest.fixture(scope="module")
def api(in_process_app):
    return in_process_app


@pytest.fixture(scope="module")
def two_runs(api):
    with api.client() as client:
        ids = [
            post_run(client, parts_of(tiny_run(i)), branch="q", repo="acme/te").json()["run_id"]
            for i in (0, 1)
        ]
        pr = post_run(client, parts_of(tiny_run(1)), branch="feature", pr_number="42", merge_base_sha="abc")
    return ids, pr.json()["run_id"]


def test_runs_list_filters_and_pages(api, two_runs):
    (base, head), pr_run = two_runs
    with api.client(token=None) as client:
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


def test_commits_benchmarks_machines(api, two_runs):
    with api.client(token=None) as client:
        commits = client.get("/api/v1/commits", params={"repo": "acme/te"}).json()["items"]
        assert len(commits) == 2 and commits[0]["committed_at"] > commits[1]["committed_at"]
        benchmarks = {b["name"]: b for b in client.get("/api/v1/benchmarks").json()}
        assert benchmarks["ops.track_share"]["higher_is_better"] is True
        assert benchmarks["ops.Scale.time_scale"]["param_names"] == ["backend", "rank"]
        assert client.get("/api/v1/machines").json()[0]["gpu_model"] == "cpu"


def test_latest_verdicts_filter(api, two_runs):
    (_, head), pr_run = two_runs
    with api.client(token=None) as client:
        latest = client.get("/api/v1/verdicts/latest", params={"branch": "q"}).json()
        assert {v["run_id"] for v in latest} == {head}
        assert len(latest) == 8
        te = client.get("/api/v1/verdicts/latest", params={"backend": "te"}).json()
        assert {v["status"] for v in te} == {"unsupported"} and len(te) == 2
        errors = client.get("/api/v1/verdicts/latest", params={"status": "error"}).json()
        assert {v["case_name"] for v in errors} == {"ops.Compile", "ops.time_fails_unrecorded"}
        # with no branch chosen, the default history: not the pull request's newer run
        assert {v["run_id"] for v in client.get("/api/v1/verdicts/latest").json()} == {head}
        assert {
            v["run_id"] for v in client.get("/api/v1/verdicts/latest", params={"branch": "feature"}).json()
        } == {pr_run}


def test_compare_two_runs(api, two_runs):
    (base, head), _ = two_runs
    with api.client(token=None) as client:
        rows = client.get("/api/v1/compare", params={"base": base, "head": head}).json()["rows"]
        assert len(rows) == 14
        ok = [r for r in rows if r["base_status"] == "ok"]
        assert all(r["ratio"] == pytest.approx(r["head_value"] / r["base_value"]) for r in ok)
        assert client.get("/api/v1/compare", params={"base": base, "head": 999999}).status_code == 404


def test_series_downsampling_keeps_failures(api, two_runs):
    with api.client(token=None) as client:
        cases = client.get("/api/v1/cases", params={"case": "ops.Compile"}).json()["items"]
        failing = next(c for c in cases if c["params"] == {"mode": "default"})
        series = client.get(f"/api/v1/series/{failing['series'][0]['id']}", params={"max_points": 2}).json()
        assert all(p["status"] == "failed" and p["value"] is None for p in series["points"])
        assert (
            client.get(f"/api/v1/series/{failing['series'][0]['id']}", params={"samples": False}).status_code
            == 200
        )
        assert client.get("/api/v1/series/999999").status_code == 404


def test_health_metrics_and_docs(api, two_runs):
    with api.client(token=None) as client:
        health = client.get("/api/v1/health").json()
        assert health["status"] == "ok" and health["schema_revision"]
        metrics = client.get("/metrics").text
        assert "tewatch_uploads_total" in metrics and 'outcome="created"' in metrics
        assert client.get("/docs").status_code == 200
        assert "/api/v1/verdicts/latest" in client.get("/openapi.json").json()["paths"]


def test_runs_by_start_time(api, two_runs):
    """since/until bound a run's start (run.json's), or its upload time where the sidecar has none."""
    ids = {}
    with api.client() as client:
        for started in ("2021-06-01T08:00:00Z", "2021-06-02T08:00:00Z", None):
            parts = parts_of(tiny_run(0))
            if started is None:
                del parts["run"]
            else:
                record = json.loads(parts["run"][0][1])
                parts["run"] = [(parts["run"][0][0], json.dumps({**record, "started_at": started}).encode())]
            answer = post_run(client, parts, branch="timed")
            assert answer.status_code == 201, answer.text
            ids[started] = answer.json()["run_id"]
    first, second, unrecorded = ids.values()

    def found(**params) -> list[int]:
        page = client.get("/api/v1/runs", params={"branch": "timed", **params})
        assert page.status_code == 200, page.text
        return [r["id"] for r in page.json()["items"]]

    with api.client(token=None) as client:
        assert found(since="2021-06-01T08:00:00", until="2021-06-02T08:00:00") == [first]
        assert found(since="2021-06-01T09:00:00Z") == [unrecorded, second]  # uploaded now, after both
        # a zone is honoured: 10:00 at +02:00 is the second run's start, which `until` excludes
        assert found(until="2021-06-02T10:00:00+02:00") == [first]
        assert found(until="2021-06-02T10:00:01+02:00") == [second, first]
        for bad in ("yesterday", "0001-01-01T00:00:00+01:00", "3000-01-02T00:00:00"):
            refused = client.get("/api/v1/runs", params={"since": bad})
            assert refused.status_code == 422, bad


def test_run_results_page_with_labels_samples_verdicts_and_gpu_state(api, two_runs):
    (base, _), _ = two_runs
    with api.client(token=None) as client:
        page = client.get(f"/api/v1/runs/{base}/results").json()
        assert page["total"] == len(page["items"]) == 14
        by_series = {row["series_id"]: row for row in page["items"]}
        ok = [row for row in page["items"] if row["status"] == "ok"]
        sampled = [row for row in ok if row["samples"]]
        assert len(ok) == 7 and sampled
        assert all(min(row["samples"]) <= row["value"] <= max(row["samples"]) for row in sampled)
        compile_failure = next(
            r for r in page["items"] if r["case_name"] == "ops.Compile" and r["status"] == "failed"
        )
        assert compile_failure["verdict"] == "error" and compile_failure["exception_class"]
        assert all(isinstance(row["gpu_state"], dict) for row in page["items"])
        pages = [
            client.get(f"/api/v1/runs/{base}/results", params={"limit": 5, "offset": offset}).json()
            for offset in (0, 5, 10)
        ]
        assert [len(p["items"]) for p in pages] == [5, 5, 4]
        assert [r["series_id"] for p in pages for r in p["items"]] == [r["series_id"] for r in page["items"]]
        bare = client.get(f"/api/v1/runs/{base}/results", params={"samples": False}).json()["items"]
        assert all(row["samples"] is None for row in bare) and len(by_series) == 14
        assert client.get("/api/v1/runs/999999/results").status_code == 404


def test_series_points_carry_machine_te_version_and_gpu_state(api, two_runs):
    with api.client(token=None) as client:
        case = client.get("/api/v1/cases", params={"case": "ops.Scale"}).json()["items"][0]
        points = client.get(f"/api/v1/series/{case['series'][0]['id']}").json()["points"]
        assert points and all(
            p["machine_name"] == "tiny-cpu" and p["te_version"] is None for p in points
        )  # no TE
        assert all(isinstance(p["gpu_state"], dict) for p in points)


def test_a_series_history_leaves_pull_requests_out_and_pr_reads_one(api, two_runs):
    (base, head), pr_run = two_runs
    with api.client(token=None) as client:
        case = client.get("/api/v1/cases", params={"case": "ops.Scale"}).json()["items"][0]
        url = f"/api/v1/series/{case['series'][0]['id']}"

        def runs(**params) -> list[int]:
            answer = client.get(url, params=params).json()
            assert answer["total_points"] == len(answer["points"])
            return [p["run_id"] for p in answer["points"]]

        history = runs()  # other tests of the module upload runs of their own
        assert pr_run not in history and [r for r in history if r in (base, head)] == [base, head]
        assert runs(branch="q") == [base, head] and runs(branch="q", limit=1) == [head]
        assert runs(pr=42) == runs(pr=42, branch="q") == runs(branch="feature") == [pr_run]
        assert runs(pr=43) == []
        assert {client.get(url, params={"pr": pr}).status_code for pr in (0, -1, 2**31)} == {422}
        described = client.get("/openapi.json").json()["paths"]["/api/v1/series/{series_id}"]["get"]
        assert "pull request" in described["description"]
        assert {p["name"] for p in described["parameters"]} >= {"branch", "pr"}


def test_alerts_and_detections_page_with_offset(api, two_runs):
    with api.client(token=None) as client:
        alerts = client.get("/api/v1/alerts").json()
        assert len(alerts) >= 2
        second = client.get("/api/v1/alerts", params={"limit": 1, "offset": 1}).json()
        assert [a["id"] for a in second] == [alerts[1]["id"]]
        assert client.get("/api/v1/alerts", params={"offset": len(alerts)}).json() == []
        assert client.get("/api/v1/detections", params={"offset": 10}).json() == []
        assert client.get("/api/v1/alerts", params={"offset": -1}).status_code == 422

"""The routes that change the store, called in process: upload, webhooks, the commit graph, detection and
alert status (tests/e2e/ covers the same routes end to end against a live server)."""

from __future__ import annotations

import json

import pytest

from tests.uploads import parts_of, post_run, tiny_run


@pytest.fixture(scope="module")
def api(in_process_app):
    return in_process_app


@pytest.fixture(scope="module")
def uploaded(api) -> list[dict]:
    with api.client() as client:
        return [post_run(client, parts_of(tiny_run(i)), branch="main").json() for i in (0, 1)]


def _records(index: int) -> list[dict]:
    return [json.loads(content) for _, content in parts_of(tiny_run(index))["cases"]]


def test_an_upload_is_stored_once_and_counts_what_its_records_say(api, uploaded):
    first = uploaded[0]
    assert first["created"] is True
    statuses = [record["verdict"]["status"] for record in _records(0)]
    assert sum(first["verdicts"].values()) >= len(statuses)
    for status in set(statuses):
        assert first["verdicts"][status] >= statuses.count(status)
    before = api.counts()
    with api.client() as client:
        again = post_run(client, parts_of(tiny_run(0)), branch="main")
    assert again.status_code == 200 and again.json()["created"] is False
    assert again.json()["run_id"] == first["run_id"] and api.counts() == before


def test_uploads_need_a_token(api):
    with api.client(token=None) as client:
        assert post_run(client, parts_of(tiny_run(0)), branch="main").status_code == 401
    with api.client(token="not-a-token") as client:
        assert post_run(client, parts_of(tiny_run(0)), branch="main").status_code == 401


def test_webhook_subscriptions_are_created_listed_and_removed(api):
    body = {"url": "https://bot.example/hook", "secret": "s" * 16, "event_types": ["correctness.failed"]}
    with api.client() as client:
        assert client.post("/api/v1/webhooks", json={**body, "secret": "short"}).status_code == 422
        created = client.post("/api/v1/webhooks", json=body)
        assert created.status_code == 201, created.text
        sub = created.json()
        assert (
            sub["url"] == body["url"] and sub["event_types"] == ["correctness.failed"] and "secret" not in sub
        )
        assert sub["id"] in [s["id"] for s in client.get("/api/v1/webhooks").json()]
        assert client.delete(f"/api/v1/webhooks/{sub['id']}").status_code == 204
        assert sub["id"] not in [s["id"] for s in client.get("/api/v1/webhooks").json()]
        assert client.delete(f"/api/v1/webhooks/{sub['id']}").status_code == 404


def test_the_commit_graph_orders_the_stored_commits(api, uploaded):
    with api.client() as client:
        runs = [client.get(f"/api/v1/runs/{u['run_id']}").json() for u in uploaded]
        shas = [run["commit_sha"] for run in runs]
        # the newer upload's commit as the parent: the graph, not the dates, orders them
        graph = [[shas[1], 1_700_000_000, []], [shas[0], 1_700_000_100, [shas[1]]]]
        answer = client.post("/api/v1/commits/graph", json={"repo": "", "commits": graph})
        assert answer.status_code == 200, answer.text
        assert answer.json() == {"commits": 2, "placed": 2}
        child_first = [graph[1], graph[0]]
        bad = client.post("/api/v1/commits/graph", json={"repo": "", "commits": child_first})
        assert bad.status_code == 422 and "send parents first" in bad.text
        listed = [c["sha"] for c in client.get("/api/v1/commits").json()["items"]]
    assert listed == [shas[0], shas[1]]  # newest first in the graph's order: the child, then its parent


def test_detection_covers_every_measured_series_of_the_branch(api, uploaded):
    with api.client() as client:
        answer = client.post("/api/v1/detect", json={"branch": "main"})
        assert answer.status_code == 200, answer.text
        results = client.get(f"/api/v1/runs/{uploaded[0]['run_id']}/results", params={"limit": 500}).json()
        assert client.post("/api/v1/detect", json={"runs": [999_999]}).status_code == 404
    measured = {r["series_id"] for r in results["items"] if r["status"] == "ok"}
    assert answer.json()["series"] == len(measured) > 0  # the series with values; failures have none


def test_a_timed_out_case_opens_an_alert_in_asv_s_words(api, uploaded):
    with api.client() as client:
        alerts = client.get("/api/v1/alerts", params={"status": "open", "kind": "correctness"}).json()
    timeout = next(a for a in alerts if a["details"]["status"] == "timeout")
    assert timeout["details"]["detail"] == "asv: benchmark timed out (timeout 2s)"


def test_an_alert_is_acknowledged_then_resolved(api, uploaded):
    with api.client() as client:
        alert = next(a for a in client.get("/api/v1/alerts", params={"status": "open"}).json())
        path = f"/api/v1/alerts/{alert['id']}/status"
        acked = client.post(path, json={"status": "acknowledged", "note": "looking", "actor": "me"})
        assert acked.status_code == 200, acked.text
        assert acked.json()["status"] == "acknowledged"
        assert client.post(path, json={"status": "flaky"}).status_code == 422
        assert client.post("/api/v1/alerts/999999/status", json={"status": "resolved"}).status_code == 404
        with api.client(token=None) as anonymous:
            assert anonymous.post(path, json={"status": "resolved"}).status_code == 401


def test_a_cpu_run_without_te_answers_its_te_version_and_commit_as_missing(api, uploaded):
    run_id = uploaded[0]["run_id"]
    with api.client() as client:
        run = client.get(f"/api/v1/runs/{run_id}").json()
        listed = client.get("/api/v1/runs", params={"branch": "main"}).json()["items"]
        [result, *_] = client.get(f"/api/v1/runs/{run_id}/results").json()["items"]
        points = client.get(f"/api/v1/series/{result['series_id']}").json()["points"]
    assert run["torch"] == "2.13.0+cpu" and (run["te_version"], run["te_commit"]) == (None, None)
    assert {(r["te_version"], r["te_commit"]) for r in listed} == {(None, None)}
    assert points and {p["te_version"] for p in points} == {None}

"""The alert, webhook and detection routes on a real `tewatch serve`."""

from __future__ import annotations

import pytest
from sqlalchemy.orm import Session

from tests.conftest import start_server, stop_server
from tewatch.alerts.lifecycle import open_alert
from tewatch.store.engine.database import make_engine
from tewatch.store.schema.alert_models import AlertKind


@pytest.fixture
def server(db_url, tmp_path, monkeypatch):
    monkeypatch.setenv("TEWATCH_WEBHOOK_WORKER", "false")
    engine = make_engine(db_url)
    with Session(engine) as session, session.begin():
        open_alert(session, "regression:a", AlertKind.regression, "gemm slower", gpu_model="NVIDIA H200")
        open_alert(
            session, "correctness:b", AlertKind.correctness, "linear 3D: error", gpu_model="NVIDIA H200"
        )
    engine.dispose()
    server = start_server(db_url, tmp_path / "serve.log")
    yield server
    stop_server(server)


def test_alert_lifecycle_through_the_api(server):
    with server.client(token=None) as anonymous, server.client() as client:
        alerts = anonymous.get("/api/v1/alerts").json()
        assert [a["kind"] for a in alerts] == ["correctness", "regression"]  # correctness first
        alert_id = alerts[1]["id"]
        assert (
            anonymous.post(f"/api/v1/alerts/{alert_id}/status", json={"status": "acknowledged"}).status_code
            == 401
        )
        answer = client.post(
            f"/api/v1/alerts/{alert_id}/status",
            json={"status": "acknowledged", "actor": "oncall", "note": "bisecting"},
        )
        assert answer.status_code == 200 and answer.json()["status"] == "acknowledged"
        assert (
            client.post(f"/api/v1/alerts/{alert_id}/status", json={"status": "resolved"}).status_code == 200
        )
        refused = client.post(f"/api/v1/alerts/{alert_id}/status", json={"status": "acknowledged"})
        assert refused.status_code == 409 and "resolved" in refused.json()["detail"]
        assert (
            client.post(f"/api/v1/alerts/{alert_id}/status", json={"status": "reopened"}).status_code == 422
        )
        assert client.post("/api/v1/alerts/999999/status", json={"status": "dismissed"}).status_code == 404
        detail = anonymous.get(f"/api/v1/alerts/{alert_id}").json()
        assert [c["to_status"] for c in detail["status_changes"]] == ["open", "acknowledged", "resolved"]
        assert detail["status_changes"][1]["note"] == "bisecting"
        assert [a["id"] for a in anonymous.get("/api/v1/alerts", params={"status": "open"}).json()] == [
            alerts[0]["id"]
        ]


def test_webhook_subscriptions_through_the_api(server):
    with server.client(token=None) as anonymous, server.client() as client:
        assert anonymous.get("/api/v1/webhooks").status_code == 401
        body = {"url": "https://bot.example/hook", "secret": "0123456789abcdef", "event_types": ["pr.report"]}
        created = client.post("/api/v1/webhooks", json=body)
        assert created.status_code == 201 and "secret" not in created.json()
        bad = client.post("/api/v1/webhooks", json={**body, "event_types": ["push"]})
        assert bad.status_code == 422 and "push" in bad.json()["detail"]
        for url, word in [
            ("https://bot.example/hook\r\nX-Injected: 1", "control characters"),
            ("https://xn--/hook", "not valid"),
            ("https://bot.example:99999/", "not valid"),
        ]:
            bad = client.post("/api/v1/webhooks", json={**body, "url": url})
            assert bad.status_code == 422 and word in bad.json()["detail"], bad.text
        for field in ("secret", "description"):
            bad = client.post("/api/v1/webhooks", json={**body, field: body["secret"] + "\x00"})
            assert bad.status_code == 422 and "NUL" in bad.text, bad.text
        assert [s["url"] for s in client.get("/api/v1/webhooks").json()] == [body["url"]]
        assert client.delete(f"/api/v1/webhooks/{created.json()['id']}").status_code == 204
        assert client.delete(f"/api/v1/webhooks/{created.json()['id']}").status_code == 404
        assert client.get("/api/v1/webhooks").json() == []
        assert client.get("/api/v1/webhooks/deliveries").json() == []


def test_detection_on_demand_through_the_api(server):
    with server.client() as client:
        answer = client.post("/api/v1/detect", json={"branch": "main"})
        assert answer.status_code == 200 and answer.json()["series"] == 0
        assert client.get("/api/v1/detections").json() == []
        assert client.get("/api/v1/prs/1/comparisons").json() == []

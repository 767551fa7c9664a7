"""Token scopes on a real `tewatch serve` (SQLite and PostgreSQL): an upload token uploads and nothing
more; it cannot read or change subscriptions nor triage alerts, and what it tried changed nothing."""

from __future__ import annotations

import subprocess
import sys

import pytest
from sqlalchemy import text
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from tests.conftest import start_server, stop_server
from tests.uploads import parts_of, post_run, tiny_run
from tewatch.alerts.lifecycle import open_alert
from tewatch.store.engine.database import make_engine
from tewatch.store.engine.migrate import upgrade
from tewatch.store.schema.alert_models import AlertKind
from tewatch.store.schema.models import TokenScope
from tewatch.store.writes.tokens import create_token

HOOK = {"url": "https://bot.example/hook", "secret": "0123456789abcdef", "event_types": ["pr.report"]}


def _tokens(db_url: str) -> dict[TokenScope, str]:
    engine = make_engine(db_url)
    try:
        with Session(engine) as session, session.begin():
            open_alert(session, "regression:a", AlertKind.regression, "gemm slower", gpu_model="H200")
        return {scope: create_token(engine, scope.value, scope) for scope in TokenScope}
    finally:
        engine.dispose()


@pytest.fixture
def served(db_url, tmp_path):
    tokens = _tokens(db_url)
    server = start_server(
        db_url,
        tmp_path / "serve.log",
        env={"TEWATCH_READ_TOKEN_REQUIRED": "true", "TEWATCH_WEBHOOK_WORKER": "0"},
    )
    yield server, tokens
    stop_server(server)


def test_an_upload_token_uploads_and_cannot_touch_subscriptions_or_alerts(served):
    server, tokens = served
    with (
        server.client(token=tokens[TokenScope.admin]) as admin,
        server.client(token=tokens[TokenScope.upload]) as runner,
        server.client(token=tokens[TokenScope.triage]) as oncall,
    ):
        subscription = admin.post("/api/v1/webhooks", json=HOOK).json()
        [alert] = admin.get("/api/v1/alerts").json()
        stored = post_run(runner, parts_of(tiny_run(0)), branch="main")
        assert stored.status_code == 201, stored.text
        assert runner.post("/api/v1/detect", json={"branch": "main"}).status_code == 200

        refused = [
            runner.get("/api/v1/webhooks"),
            runner.post("/api/v1/webhooks", json={**HOOK, "url": "https://other.example/"}),
            runner.delete(f"/api/v1/webhooks/{subscription['id']}"),
            runner.get("/api/v1/webhooks/deliveries"),
            runner.post("/api/v1/webhooks/deliveries/x/redeliver"),
            runner.post(f"/api/v1/alerts/{alert['id']}/status", json={"status": "acknowledged"}),
            runner.post(f"/api/v1/alerts/{alert['id']}/status", json={"status": "dismissed"}),
            oncall.get("/api/v1/webhooks"),
            oncall.delete(f"/api/v1/webhooks/{subscription['id']}"),
            post_run(oncall, parts_of(tiny_run(1)), branch="main"),
        ]
        assert [answer.status_code for answer in refused] == [403] * len(refused)
        assert "scope is upload" in refused[0].json()["detail"]
        assert "--scope admin" in refused[0].json()["detail"]
        assert "--scope triage" in refused[5].json()["detail"]

        # nothing the refused requests asked for happened
        assert [s["url"] for s in admin.get("/api/v1/webhooks").json()] == [HOOK["url"]]
        assert admin.get(f"/api/v1/alerts/{alert['id']}").json()["status"] == "open"
        assert admin.get("/api/v1/runs").json()["total"] == 1

        # each scope does what it is for; any token reads
        assert (
            oncall.get("/api/v1/runs").status_code == 200 and runner.get("/api/v1/alerts").status_code == 200
        )
        answer = oncall.post(f"/api/v1/alerts/{alert['id']}/status", json={"status": "acknowledged"})
        assert answer.status_code == 200 and answer.json()["status"] == "acknowledged"
        assert admin.delete(f"/api/v1/webhooks/{subscription['id']}").status_code == 204


def test_metrics_need_a_token_where_reads_do(served):
    server, tokens = served
    with server.client(token=None) as anonymous, server.client(token=tokens[TokenScope.upload]) as runner:
        assert anonymous.get("/metrics").status_code == 401
        assert anonymous.get("/api/v1/runs").status_code == 401
        assert server.client(token="tw_unknown").get("/metrics").status_code == 401
        answer = runner.get("/metrics")
        assert answer.status_code == 200 and "tewatch_http_requests" in answer.text


def test_the_openapi_document_declares_the_token_and_who_may_do_what(served):
    server, _ = served
    with server.client(token=None) as anonymous:
        document = anonymous.get("/openapi.json").json()
    assert document["components"]["securitySchemes"]["token"] == {
        "type": "http",
        "scheme": "bearer",
        "description": document["components"]["securitySchemes"]["token"]["description"],
    }
    paths = document["paths"]
    for path, method in [
        ("/api/v1/runs", "post"),
        ("/api/v1/webhooks", "get"),
        ("/api/v1/alerts/{alert_id}/status", "post"),
    ]:
        operation = paths[path][method]
        assert operation["security"] == [{"token": []}], path
        assert {"401", "403"} <= set(operation["responses"]), path
    assert "security" not in paths["/api/v1/runs"]["get"]  # reads are open unless configured otherwise


def test_token_create_names_the_scope_and_list_shows_it(db_url):
    cli = [sys.executable, "-m", "tewatch", "token"]
    made = subprocess.run(
        [*cli, "create", "--name", "runner", "--db", db_url], capture_output=True, text=True
    )
    assert made.returncode == 0, made.stderr
    assert "created upload token 'runner', which may upload runs" in made.stderr
    triage = subprocess.run(
        [*cli, "create", "--scope", "triage", "--db", db_url], capture_output=True, text=True
    )
    assert "created triage token, which may acknowledge" in triage.stderr
    wrong = subprocess.run(
        [*cli, "create", "--scope", "root", "--db", db_url], capture_output=True, text=True
    )
    assert wrong.returncode == 2 and "root" in wrong.stderr
    listed = subprocess.run([*cli, "list", "--db", db_url], capture_output=True, text=True).stdout
    assert [line.split("\t")[1:3] for line in listed.splitlines()] == [["runner", "upload"], ["-", "triage"]]


def test_tokens_from_before_scopes_become_admin(tmp_path):
    url = f"sqlite:///{tmp_path / 'old.sqlite3'}"
    upgrade(url, "0012_case_machine")
    engine = make_engine(url)
    with engine.begin() as conn:
        conn.execute(
            text("INSERT INTO api_tokens (name, token_hash, created_at) VALUES ('old', :h, '2026-01-01')"),
            {"h": "0" * 64},
        )
    upgrade(url)
    with engine.connect() as conn:
        assert conn.execute(text("SELECT scope FROM api_tokens")).scalar_one() == "admin"
    engine.dispose()
    refused = make_engine(url)
    with pytest.raises(IntegrityError, match="NOT NULL"), refused.begin() as conn:
        conn.execute(
            text("INSERT INTO api_tokens (name, token_hash, created_at) VALUES ('x', 'y', '2026-01-01')")
        )
    refused.dispose()

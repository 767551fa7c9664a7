"""POST/GET /api/v1/bisections in process, on SQLite and PostgreSQL: stored, replaced under the same
question, linked to an alert, refused when malformed, and `bisection.finished` emitted once."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from tewatch.store.engine.database import make_engine
from tewatch.store.schema.alert_models import WebhookEvent

GOOD, BAD, CULPRIT, SKIPPED = "a" * 40, "b" * 40, "c" * 40, "d" * 40


def body(**changes) -> dict:
    steps = [
        {"position": 0, "sha": GOOD, "verdict": "good", "evidence": {"x": {"status": "pass"}}},
        {"position": 3, "sha": SKIPPED, "verdict": "skip", "skip_reason": "import failed"},
        {"position": 4, "sha": CULPRIT, "verdict": "bad", "subject": "Rewrite __reduce_ex__", "run_id": None},
        {"position": 8, "sha": BAD, "verdict": "bad", "evidence": {"x": {"status": "fail_accuracy"}}},
    ]
    found = {
        "repo": "NVIDIA/TransformerEngine",
        "good": GOOD,
        "bad": BAD,
        "judge": "correctness",
        "selection": "checks.Dcp",
        "status": "running",
        "commits": 9,
        "steps": steps,
    }
    return {**found, **changes}


def events(db_url: str) -> list[dict]:
    engine = make_engine(db_url)
    try:
        with Session(engine) as session:
            rows = session.scalars(select(WebhookEvent).where(WebhookEvent.type == "bisection.finished"))
            return [json.loads(row.body)["data"] for row in rows]
    finally:
        engine.dispose()


@pytest.fixture(scope="module")
def api(in_process_app):
    return in_process_app


def test_a_bisection_is_stored_replaced_and_finished_once(api) -> None:
    with api.client() as client:
        first = client.post("/api/v1/bisections", json=body())
        assert first.status_code == 200, first.text
        bisection = first.json()
        assert [s["position"] for s in bisection["steps"]] == [0, 3, 4, 8] and bisection[
            "culprit_sha"
        ] is None
        finished = body(status="finished", culprit=CULPRIT, culprit_subject="Rewrite __reduce_ex__")
        again = client.post("/api/v1/bisections", json=finished).json()
        assert again["id"] == bisection["id"] and again["status"] == "finished"
        assert again["culprit_url"] == f"https://github.com/NVIDIA/TransformerEngine/commit/{CULPRIT}"
        client.post("/api/v1/bisections", json=finished)
        read = client.get(f"/api/v1/bisections/{bisection['id']}").json()
        assert read["steps"][1]["skip_reason"] == "import failed"
        assert [b["id"] for b in client.get("/api/v1/bisections").json()] == [bisection["id"]]
        assert client.get("/api/v1/bisections/99999").status_code == 404
        page = client.get(f"/bisections/{bisection['id']}")
        assert page.status_code == 200 and "Rewrite __reduce_ex__" in page.text
        assert client.get("/bisections/99999").status_code == 404
    sent = events(api.db_url)
    assert len(sent) == 1 and sent[0]["culprit"] == CULPRIT
    assert sent[0]["markdown"].startswith(f"Bisection: first bad commit [`{CULPRIT[:12]}`]")


@pytest.mark.parametrize(
    "change",
    [
        {"good": "not-a-sha"},
        {"judge": "vibes"},
        {"status": "done"},
        {"commits": 1},
        {"selection": "a\u0000b"},
        {"steps": [{"position": 0, "sha": GOOD, "verdict": "maybe"}]},
        {"steps": [{"position": 0, "sha": GOOD, "verdict": "good", "seconds": -1}]},
        {"endpoints": {"deep": "x" * 70_000}},
    ],
)
def test_malformed_bisections_are_refused_and_store_nothing(api, change) -> None:
    with api.client() as client:
        before = client.get("/api/v1/bisections").json()
        answer = client.post("/api/v1/bisections", json=body(**{"selection": "other", **change}))
        assert answer.status_code == 422, answer.text
        assert client.get("/api/v1/bisections").json() == before


def test_nan_evidence_and_unknown_links_are_4xx(api) -> None:
    with api.client() as client:
        text = json.dumps(body(selection="nan"))[:-1] + ', "endpoints": {"v": NaN}}'
        answer = client.post("/api/v1/bisections", content=text, headers={"content-type": "application/json"})
        assert answer.status_code == 422, answer.text
        linked = client.post("/api/v1/bisections", json=body(selection="linked", alert_id=4242))
        assert linked.status_code == 404 and "no alert 4242" in linked.text
        with api.client(token=None) as anonymous:
            assert anonymous.post("/api/v1/bisections", json=body()).status_code == 401

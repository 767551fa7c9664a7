"""A real `tewatch serve` configured for GitHub: the kept H200 campaign's base and pull-request head are
uploaded with `tewatch upload`, and the report arrives at the local GitHub (tests/github/fake_github.py)
as one comment and a failing status on the head commit."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, served_sqlite
from tests.github.fake_github import FakeGitHub
from tests.served import run_cli
from tewatch.github.comment import MARKER

pytestmark = pytest.mark.long_running

KEPT = FIXTURES / "h200-campaign"
TOKEN = "ghp_" + "e" * 36
PR = 4242


def commit_of(results: Path) -> str:
    [result] = (results / "vm-h200").glob("*-existing-*.json")
    return json.loads(result.read_text())["commit_hash"]


def upload(server, results: Path, *args: str) -> None:
    done = run_cli(
        [
            "upload",
            str(results),
            "--url",
            server.url,
            "--token",
            server.token,
            "--repo",
            "acme/TransformerEngine",
            *args,
        ],
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]


def wait_for(condition, timeout: float = 180.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.25)
    return False


def test_an_uploaded_pull_request_gets_one_comment_and_a_failing_status(tmp_path):
    base, head = commit_of(KEPT / "base-results"), commit_of(KEPT / "head-results")
    with FakeGitHub(token=TOKEN) as fake:
        fake.add_comment(PR, "Could someone run this on an H200?")
        fake.fail_next("POST", rf".*/statuses/{head}", 503)
        env = {
            "TEWATCH_GITHUB_REPOSITORY": "acme/TransformerEngine",
            "TEWATCH_GITHUB_API_URL": fake.url,
            "TEWATCH_GITHUB_TOKEN": TOKEN,
            "TEWATCH_WEBHOOK_POLL_SECONDS": "0.2",
            "TEWATCH_WEBHOOK_BACKOFF_SECONDS": "0.2",
            "TEWATCH_PUBLIC_URL": "http://tewatch.example",
        }
        with served_sqlite(tmp_path, env=env) as (server, _):
            upload(server, KEPT / "base-results", "--branch", "main")
            upload(server, KEPT / "head-results", "--pr", str(PR), "--base", base)
            assert wait_for(lambda: fake.commit_statuses(head)), "no commit status arrived"
            with server.client() as api:
                [subscription] = [s for s in api.get("/api/v1/webhooks").json() if s["kind"] == "github"]
                deliveries = api.get(
                    "/api/v1/webhooks/deliveries", params={"subscription_id": subscription["id"]}
                ).json()
        [status] = fake.commit_statuses(head)
        assert status["state"] == "failure"
        assert status["context"] == "tewatch/NVIDIA H200"
        assert status["target_url"] == f"http://tewatch.example/pr/{PR}"
        assert status["description"].startswith("2 new correctness failures, 11 regressions")
        comments = fake.issue_comments(PR)
        assert comments[0]["body"] == "Could someone run this on an H200?"
        [comment] = [c for c in comments if c["body"].startswith(MARKER)]
        assert f"## tewatch: PR #{PR} on NVIDIA H200" in comment["body"]
        assert "fp8-current" in comment["body"] and head[:12] in comment["body"]
        assert subscription["url"] == f"{fake.url}/repos/acme/TransformerEngine"
        [delivery] = deliveries
        assert delivery["status"] == "delivered" and delivery["attempts"] == 2  # the 503, then the retry

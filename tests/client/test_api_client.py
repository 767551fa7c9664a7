"""tewatch.client.api against a real `tewatch serve`: the writes the CLI and the campaign make, the
pages the campaign saves, and one sentence for a refusal or a service that is not there."""

from __future__ import annotations

import sys

import pytest

from tests.conftest import free_port
from tests.uploads import TINY
from tewatch.client.api import ApiClient, ClientError
from tewatch.client.retries import RetryPolicy
from tewatch.ingest.discover import find_runs


def test_the_campaigns_calls_through_the_api_client(live_server):
    with ApiClient(live_server.url, live_server.token) as client:
        assert client.healthy()
        hook = client.add_webhook("https://bot.example/hook", "s" * 16, ["pr.report"], "test receiver")
        assert hook["event_types"] == ["pr.report"]
        run = find_runs(TINY)[0]
        sent = client.upload(run.parts(), {"branch": "api", "pr_number": ""}, RetryPolicy(), detect=False)
        assert sent.stored is not None and sent.tries == 1, sent.error
        found = client.detect("api", [sent.stored["run_id"]], RetryPolicy())
        assert found["series"] >= 1
        assert [r["id"] for r in client.runs({"branch": "api"})] == [sent.stored["run_id"]]
        assert "<html" in client.page("/runs").lower()
        assert client.pr_comparisons(1) == []


def test_refusals_and_absent_services_are_one_sentence(live_server):
    with ApiClient(live_server.url) as anonymous, pytest.raises(ClientError) as refused:
        anonymous.add_webhook("http://127.0.0.1:9/hook", "s" * 16, ["pr.report"], "")
    assert str(refused.value).startswith("POST /api/v1/webhooks answered HTTP 401: ")
    with ApiClient(live_server.url, "not-a-token") as wrong:
        run = find_runs(TINY)[0]
        sent = wrong.upload(run.parts(), {}, RetryPolicy(attempts=3, wait=0.01), detect=True)
        assert sent.stored is None and sent.tries == 1 and sent.error.startswith("HTTP 401: ")
    with ApiClient(f"http://127.0.0.1:{free_port()}") as nowhere:
        assert not nowhere.healthy()
        with pytest.raises(ClientError, match=r"^cannot reach tewatch at http://127\.0\.0\.1:\d+: "):
            nowhere.send_commit_graph("", [("a" * 40, 0, [])])


def test_the_api_client_needs_no_pandas():
    import subprocess

    probe = "import sys, tewatch.client.api, tewatch.cli.upload; print('pandas' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"

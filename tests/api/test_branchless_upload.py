"""An upload that names no branch: filed on main unless it is a pull request's, so its verdicts follow
main's and it opens no second correctness alert for a case main already has one open for."""

from __future__ import annotations

import pytest

from tests.conftest import FIXTURES
from tests.uploads import post_folder_run


@pytest.fixture
def api(db_url):
    from tests.conftest import app_in_process

    with app_in_process(db_url) as app:
        yield app


def open_correctness_alerts(client) -> list[dict]:
    answer = client.get("/api/v1/alerts", params={"status": "open", "kind": "correctness", "limit": 500})
    body = answer.json()
    return body["items"] if isinstance(body, dict) else body


def test_a_run_without_a_branch_lands_on_main_and_opens_no_second_alert(api):
    with api.client() as client:
        first = post_folder_run(client, FIXTURES / "h200-quick")
        assert first.status_code == 201, first.text
        opened = open_correctness_alerts(client)
        assert opened, "the quick profile on TE 2.20.2 has failing cases"
        again = post_folder_run(client, FIXTURES / "h200-quick-rerun", branch="")
        assert again.status_code == 201, again.text
        run = client.get(f"/api/v1/runs/{again.json()['run_id']}").json()
        assert run["branch"] == "main"
        after = open_correctness_alerts(client)
    assert sorted(a["case_id"] for a in after) == sorted(a["case_id"] for a in opened)
    assert len({a["case_id"] for a in after}) == len(after)


def test_a_pull_request_s_run_without_a_branch_stays_off_every_branch(api):
    with api.client() as client:
        base = post_folder_run(client, FIXTURES / "h200-quick").json()
        sha = client.get(f"/api/v1/runs/{base['run_id']}").json()["commit_sha"]
        answer = post_folder_run(
            client, FIXTURES / "h200-quick-rerun", branch="", pr_number="7", merge_base_sha=sha
        )
        assert answer.status_code == 201, answer.text
        run = client.get(f"/api/v1/runs/{answer.json()['run_id']}").json()
    assert run["branch"] is None and run["pr_number"] == 7

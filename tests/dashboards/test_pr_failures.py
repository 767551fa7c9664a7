"""The pull-request page counts correctness failures the way the PR's `pr.report` does: only cases whose
verdict left `pass` on the head (or are new and failing); cases that failed on the merge base already are
listed apart as known failures, and a second pull request that makes the base's failure pass again lists it
as fixed (page and `pr.report`); the same fix landing on main resolves the base's alert with its commit.
A real server, real uploads of a real fixture run, Chromium."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from tests.conftest import LiveServer, served_sqlite
from tests.dashboards.conftest import screenshot
from tests.dashboards.expectations import FAILURES
from tests.uploads import parts_of, post_run, tiny_run

PR = 77
FIXING_PR = 78
BASELESS_PR = 79
UNMEASURED_BASE = "0bad" + "0" * 36  # a merge base no run was uploaded for
FIX_SHA = "f1xed" + "0" * 35
MERGED_SHA = "3e7ed" + "0" * 35  # the fix on main
KNOWN_EXCEPTION = "FailsOnTheBaseToo"
NEW_EXCEPTION = "FailsOnlyInThisPullRequest"
MARKUP = '<b id="tewatch-markup">bold</b>'  # in the base's failure message: shown as text, never as markup


@dataclass
class PrSite:
    server: LiveServer
    known_failures: int  # failing verdicts of the base run (case records and failed benchmarks), all failing on the head too
    base_run_id: int
    head_sha: str
    base_sha: str


def _with_commit(parts: dict, commit: str) -> dict:
    results = json.loads(parts["result"][0][1])
    results["commit_hash"] = commit
    parts["result"] = [(parts["result"][0][0], json.dumps(results).encode())]
    return parts


def _fail_first_passing(parts: dict, exception_class: str, message: str = "") -> dict:
    for i, (name, content) in enumerate(parts["cases"]):
        record = json.loads(content)
        if record["verdict"].get("status") == "pass":
            record["verdict"] = {
                "status": "error",
                "check": record["verdict"].get("check", ""),
                "exception_class": exception_class,
                "message": message or f"{exception_class} here",
            }
            parts["cases"][i] = (name, json.dumps(record).encode())
            return parts
    raise AssertionError("no passing case left to fail")


def _failing(parts: dict) -> int:
    return sum(json.loads(content)["verdict"].get("status") in FAILURES for _name, content in parts["cases"])


def _failing_verdicts(db_url: str, run_id: int) -> int:
    from sqlalchemy import func, select

    from tewatch.store.engine.database import make_engine
    from tewatch.store.schema.models import Verdict

    engine = make_engine(db_url)
    try:
        with engine.connect() as connection:
            return connection.scalar(
                select(func.count())
                .select_from(Verdict)
                .where(Verdict.run_id == run_id, Verdict.status.in_(sorted(FAILURES)))
            )
    finally:
        engine.dispose()


@pytest.fixture(scope="module")
def pr_site(tmp_path_factory) -> Iterator[PrSite]:
    with served_sqlite(tmp_path_factory.mktemp("pr-failures")) as (server, db_url):
        base_sha, head_sha = "ba5e" + "0" * 36, "feed" + "0" * 36
        base = _fail_first_passing(
            _with_commit(parts_of(tiny_run()), base_sha), KNOWN_EXCEPTION, f"{KNOWN_EXCEPTION} here {MARKUP}"
        )
        head = _fail_first_passing(_with_commit(parts_of(tiny_run()), head_sha), KNOWN_EXCEPTION)
        head = _fail_first_passing(head, NEW_EXCEPTION)
        assert _failing(head) == _failing(base) + 1
        with server.client() as client:
            answer = post_run(client, base, branch="main")
            assert answer.status_code == 201, answer.text
            base_run_id = answer.json()["run_id"]
            answer = post_run(client, head, pr_number=str(PR), merge_base_sha=base_sha, branch="feature")
            assert answer.status_code == 201, answer.text
            # the base's KNOWN_EXCEPTION failure passes again in this one (the tiny run as it is)
            fixing = _with_commit(parts_of(tiny_run()), FIX_SHA)
            answer = post_run(client, fixing, pr_number=str(FIXING_PR), merge_base_sha=base_sha, branch="fix")
            assert answer.status_code == 201, answer.text
            baseless = _with_commit(parts_of(tiny_run()), "be11" + "0" * 36)
            answer = post_run(
                client, baseless, pr_number=str(BASELESS_PR), merge_base_sha=UNMEASURED_BASE, branch="lone"
            )
            assert answer.status_code == 201, answer.text
        yield PrSite(server, _failing_verdicts(db_url, base_run_id), base_run_id, head_sha, base_sha)


def _report_alerts(site: PrSite) -> list[dict]:
    """The correctness alerts detection opened for the PR: one per failure its `pr.report` lists."""
    with site.server.client() as client:
        for _ in range(100):
            alerts = client.get("/api/v1/alerts", params={"kind": "correctness", "pr": PR}).json()
            if alerts:
                return alerts
            time.sleep(0.1)
    return []


def test_pr_page_counts_only_new_failures_and_lists_known_ones_apart(pr_site, page):
    response = page.goto(f"{pr_site.server.url}/pr/{PR}")
    assert response is not None and response.status == 200
    screenshot(page, "pull-request-known-failures")

    assert page.inner_text("#pr-new-failures-count") == "1 correctness failure"
    new_rows = page.query_selector_all("#pr-failures tbody tr")
    assert len(new_rows) == 1
    assert NEW_EXCEPTION in new_rows[0].inner_text()
    assert new_rows[0].get_attribute("data-base-status") == "pass"

    known = pr_site.known_failures
    assert known >= 2
    assert page.inner_text("#pr-known-failures-count") == f"{known} known failures"
    assert "Known failures, also failing on the base" in page.inner_text("main")
    known_rows = page.query_selector_all("#pr-known-failures tbody tr")
    assert len(known_rows) == known
    assert any(KNOWN_EXCEPTION in r.inner_text() for r in known_rows)
    assert all(r.get_attribute("data-base-status") not in ("", "pass") for r in known_rows)
    assert NEW_EXCEPTION not in page.inner_text("#pr-known-failures")

    # it leads with what the pull request changed, then the failures the base has too
    html = page.content()
    assert (
        html.index('id="pr-failures"') < html.index('id="pr-known-failures"') < html.index('id="pr-verdicts"')
    )
    head = page.inner_text("#pr-head")
    assert pr_site.head_sha[:10] in head and pr_site.base_sha[:10] in head and "one run per side" in head
    assert page.query_selector("#pr-no-base-runs") is None
    assert page.query_selector(f"#pr-base-runs a[href='/runs/{pr_site.base_run_id}']") is not None

    # the same split as the report's: detection opened exactly one correctness alert, for the new failure
    alerts = _report_alerts(pr_site)
    assert len(alerts) == 1, alerts
    assert str(new_rows[0].query_selector("a[href^='/case/']").get_attribute("href")).endswith(
        f"/{alerts[0]['case_id']}"
    )
    assert not page.problems, page.problems


def _poll(read, tries: int = 100):
    for _ in range(tries):
        found = read()
        if found:
            return found
        time.sleep(0.1)
    return read()


def _pr_report(db_url: str, pr_number: int) -> dict | None:
    from sqlalchemy import select

    from tewatch.store.engine.database import make_engine
    from tewatch.store.schema.alert_models import WebhookEvent

    engine = make_engine(db_url)
    try:
        with engine.connect() as connection:
            bodies = connection.scalars(
                select(WebhookEvent.body).where(WebhookEvent.type == "pr.report")
            ).all()
    finally:
        engine.dispose()
    return next(
        (json.loads(b)["data"] for b in bodies if json.loads(b)["data"]["pr_number"] == pr_number), None
    )


def test_pr_page_and_report_list_the_failure_a_pull_request_fixes(pr_site, page):
    response = page.goto(f"{pr_site.server.url}/pr/{FIXING_PR}")
    assert response is not None and response.status == 200
    screenshot(page, "pull-request-fixes")

    assert page.inner_text("#pr-fixed-count") == "1 fixed"
    assert "Fixed by this pull request" in page.inner_text("main")
    [row] = page.query_selector_all("#pr-fixed tbody tr")
    assert row.get_attribute("data-base-status") == "error"
    assert KNOWN_EXCEPTION in row.inner_text() and MARKUP in row.inner_text()
    assert page.query_selector("#tewatch-markup") is None
    case_href = str(row.query_selector("a[href^='/case/']").get_attribute("href"))
    assert case_href == f"/case/{row.get_attribute('data-case-id')}"
    # the rest of the base's failures still fail here: known, not fixed and not new
    assert page.query_selector("#pr-new-failures-count") is None
    assert len(page.query_selector_all("#pr-known-failures tbody tr")) == pr_site.known_failures - 1
    assert KNOWN_EXCEPTION not in page.inner_text("#pr-known-failures")
    assert (
        page.query_selector("#pr-fixed") is not None
        and page.goto(f"{pr_site.server.url}{case_href}").status == 200
    )
    assert not page.problems, page.problems

    report = _poll(lambda: _pr_report(pr_site.server.db_url, FIXING_PR))
    assert report is not None, "no pr.report for the fixing pull request"
    [fixed] = report["fixed"]
    assert case_href.endswith(f"/{fixed['case_id']}") and fixed["previous"] == "error"
    assert fixed["exception_class"] == KNOWN_EXCEPTION and KNOWN_EXCEPTION in fixed["previous_detail"]
    assert report["correctness_failures"] == 0 and "### Fixed by this pull request" in report["markdown"]
    assert KNOWN_EXCEPTION in report["markdown"] and MARKUP not in report["markdown"]
    assert "&lt;b id=" in report["markdown"]

    # the page of the pull request that fixes nothing has no such section
    page.goto(f"{pr_site.server.url}/pr/{PR}")
    assert page.query_selector("#pr-fixed") is None and page.query_selector("#pr-fixed-count") is None


def _main_alert(site: PrSite, status: str) -> dict | None:
    with site.server.client() as client:
        alerts = client.get(
            "/api/v1/alerts", params={"kind": "correctness", "branch": "main", "status": status}
        ).json()
    return next((a for a in alerts if KNOWN_EXCEPTION in a["details"].get("detail", "")), None)


def test_a_fix_uploaded_on_main_resolves_the_alert_with_its_commit(pr_site):
    opened = _poll(lambda: _main_alert(pr_site, "open"))
    assert opened is not None, "detection opened no alert for the base's failure"
    with pr_site.server.client() as client:
        answer = post_run(client, _with_commit(parts_of(tiny_run()), MERGED_SHA), branch="main")
        assert answer.status_code == 201, answer.text
        fix_run_id = answer.json()["run_id"]
        resolved = _poll(lambda: _main_alert(pr_site, "resolved"))
        assert resolved is not None and resolved["id"] == opened["id"], resolved
        assert (
            resolved["details"]["fixed_by_commit"] == MERGED_SHA
            and resolved["details"]["fixed_by_run"] == fix_run_id
        )
        history = client.get(f"/api/v1/alerts/{opened['id']}").json()["status_changes"]
    assert [c["to_status"] for c in history] == ["open", "resolved"]
    assert MERGED_SHA in history[-1]["note"] and history[-1]["actor"] == "detector"


def test_a_merge_base_without_runs_is_said_on_the_page_and_in_the_report(pr_site, page):
    response = page.goto(f"{pr_site.server.url}/pr/{BASELESS_PR}")
    assert response is not None and response.status == 200
    screenshot(page, "pull-request-base-without-runs")
    note = page.inner_text("#pr-no-base-runs")
    assert UNMEASURED_BASE[:10] in note and "has no runs on machine" in note and "tewatch run --ab" in note
    assert "No run of the merge base" in page.inner_text("#pr-base-runs")
    assert not page.problems, page.problems

    report = _poll(lambda: _pr_report(pr_site.server.db_url, BASELESS_PR))
    assert report is not None and report["base_run_ids"] == [] and report["base_sha"] == UNMEASURED_BASE
    assert f"The merge base `{UNMEASURED_BASE[:12]}` has no runs on machine" in report["markdown"]
    assert set(report["case_counts"]) <= {"inconclusive"}

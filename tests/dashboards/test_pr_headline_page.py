"""The pull request page's headline in Chromium on a real `tewatch serve`: the kept H200 rounds turned
around with three speed-ups made suspect (tests/pipeline/test_suspect_speedups.py says how) count the
suspects apart from the improvements, and the table of verdicts calls those series suspect."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from tests.conftest import LiveServer, served_sqlite
from tests.dashboards.conftest import screenshot
from tests.pipeline.test_suspect_speedups import SPEED_UPS, commit_of, suspect_rounds
from tests.uploads import parts_of, post_run
from tewatch.ingest.discover import find_runs

PR = 1


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Iterator[LiveServer]:
    folder = tmp_path_factory.mktemp("suspects")
    base, head = suspect_rounds(folder)
    store = folder / "store"
    store.mkdir()
    with served_sqlite(store) as (server, _):
        with server.client() as client:
            answer = post_run(client, parts_of(find_runs(base)[0]), branch="main")
            assert answer.status_code == 201, answer.text
            fields = {"branch": "pr-1", "pr_number": str(PR), "merge_base_sha": commit_of(base)}
            answer = post_run(client, parts_of(find_runs(head)[0]), **fields)
            assert answer.status_code == 201, answer.text
        yield server


def _compared(server: LiveServer, page) -> None:
    """Wait for detection, which runs after the upload's answer, to have compared the pull request."""
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        page.goto(f"{server.url}/pr/{PR}")
        if page.query_selector("#pr-improvements"):
            return
        time.sleep(1)
    raise AssertionError("the pull request was not compared within 180 s")


def test_the_headline_counts_suspect_speed_ups_apart_from_improvements(site, page):
    _compared(site, page)
    assert page.inner_text("#pr-suspects-count") == "3 suspect speed-ups"
    assert page.inner_text("#pr-improvements-count") == f"{SPEED_UPS - 3} improvements"
    assert page.inner_text("#pr-new-failures-count") == "1 correctness failure"
    assert page.query_selector("[data-role=nothing-changed]") is None
    suspect_rows = page.query_selector_all("#pr-verdicts tbody tr[data-verdict=suspect]")
    assert len(suspect_rows) >= 3
    assert all(row.inner_text().startswith("suspect") for row in suspect_rows)
    suspect_links = {row.query_selector("a[href^='/series/']").get_attribute("href") for row in suspect_rows}
    improvement_links = {
        a.get_attribute("href") for a in page.query_selector_all("#pr-improvements a[href^='/series/']")
    }
    assert suspect_links and not suspect_links & improvement_links
    assert not page.problems, page.problems
    screenshot(page, "pull-request-suspect-speed-ups")

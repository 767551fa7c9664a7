"""The pages that say what each TE release changed, in Chromium, against a real `tewatch serve` over the kept
H200 releases (tests/fixtures/h200-releases) loaded as `tewatch demo` loads them: each release's runs under
its commit and date, each followed by the detection an upload gets."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest

from tests.conftest import REPO_ROOT, LiveServer, start_server, stop_server
from tests.dashboards.conftest import screenshot
from tewatch.campaign.demo import RELEASE_HISTORY, load_runs
from tewatch.campaign.release_history import release_runs
from tewatch.core.te_releases import version_hash
from tewatch.store.engine.migrate import upgrade

STAND_IN = version_hash("2.20.2")  # TE 2.20.2's wheel named no commit: its runs are filed under this


@dataclass
class Releases:
    server: LiveServer
    runs: dict[str, list[int]]  # version -> its runs, in the manifest's order

    @property
    def url(self) -> str:
        return self.server.url


@pytest.fixture(scope="module")
def releases(tmp_path_factory) -> Iterator[Releases]:
    folder = tmp_path_factory.mktemp("releases")
    db_url = f"sqlite:///{folder / 'tewatch.sqlite3'}"
    upgrade(db_url)
    runs: dict[str, list[int]] = {}
    for release in release_runs(REPO_ROOT / RELEASE_HISTORY):
        stored = load_runs(db_url, release.runs(), "main", commit_date=release.commit_date)
        runs.setdefault(release.version, []).extend(run_id for run_id, _ in stored)
    server = start_server(db_url, folder / "serve.log")
    try:
        yield Releases(server, runs)
    finally:
        stop_server(server)


def open_page(page, releases: Releases, path: str, name: str = ""):
    response = page.goto(releases.url + path)
    assert response is not None and response.status == 200, f"{path}: {response and response.status}"
    page.wait_for_load_state("networkidle")
    if name:
        screenshot(page, name)
    return page


def step(page, head: str):
    return page.locator(f"section.release-step[data-head='{head}']")


def test_the_releases_view_lists_each_step_newest_first_with_what_changed(releases, page):
    open_page(page, releases, "/releases", "releases")
    assert page.locator("nav a.active").inner_text() == "Releases"
    heads = page.eval_on_selector_all("section.release-step", "els => els.map(e => e.dataset.head)")
    assert heads == ["2.20.2", "2.19.0"]
    first = step(page, "2.19.0")
    assert first.locator("h2").inner_text().startswith("TE 2.18.0 → 2.19.0")
    counts = first.locator("[data-role=counts]").inner_text()
    assert "4 regressions" in counts and "1 improvement" in counts
    assert "2 new failures" in counts and "12 fixed" in counts
    # the largest regression of tests/fixtures/h200-releases/README.md, first, sized, linked to its series
    top = first.locator("table[data-role=regressions] tbody tr").first
    assert top.locator("td").first.inner_text() == "checks.CpuOps.track_seconds"
    assert "quantizer=fp8-delayed" in top.inner_text()
    assert top.locator("[data-role=effect]").inner_text() == "+950.9 %"
    failures = first.locator("table[data-role=new-failures] tbody tr")
    assert failures.count() == 2 and "contracts.CheckpointParity" in failures.first.inner_text()
    assert "fail accuracy" in failures.first.inner_text()
    fixed = first.locator("table[data-role=fixes]").inner_text()
    assert "inner_tensor_specs" in fixed  # what failed before, not the passing verdict's empty detail
    # the 2.20.2 runs are filed under the version's stand-in: named so, never as a commit
    later = step(page, "2.20.2").inner_text()
    assert "no commit" in later and STAND_IN[:7] not in later
    with page.expect_navigation():
        top.locator("a").first.click()
    assert re.search(r"/series/\d+$", page.url)
    assert page.locator("#release-steps tr[data-head='2.19.0'][data-verdict=regression]").count() == 1
    assert not page.problems


def test_a_series_page_shows_each_release_step_as_a_level_of_its_own(releases, page):
    open_page(page, releases, "/releases")
    series = step(page, "2.19.0").locator("table[data-role=regressions] tbody tr").first
    series_id = series.get_attribute("data-series-id")  # CpuOps fp8-delayed, +950.9 %
    open_page(page, releases, f"/series/{series_id}", "release-series")
    assert page.locator("h1 [data-role=release-verdict]").inner_text().endswith("TE 2.19.0 → 2.20.2")
    table = page.locator("#release-steps tbody tr")
    assert [table.nth(i).get_attribute("data-head") for i in range(table.count())] == ["2.20.2", "2.19.0"]
    page.wait_for_selector("#change-points tbody tr td:has-text('release step')")
    change_points = page.locator("#change-points tbody").inner_text()
    assert "No change points" not in change_points
    assert "release step TE 2.18.0 → 2.19.0" in change_points and "+950.9 %" in change_points
    assert "TE 2.20.2" in change_points and STAND_IN[:7] not in page.locator("main").inner_text()
    with httpx.Client(base_url=releases.url, timeout=60) as client:
        chart = client.get(f"/series/{series_id}/points.json").json()
    # one baseline band per level, not one across the releases
    assert len(chart["band"]) == 3
    assert chart["band"][0]["upper"] < chart["band"][1]["lower"]
    assert not page.problems


def test_the_run_page_names_its_release_once_and_no_stand_in_as_a_commit(releases, page):
    run_id = releases.runs["2.20.2"][0]
    open_page(page, releases, f"/runs/{run_id}", "release-run")
    assert "TE 2.20.2 (no commit)" in page.locator(".page-head .sub").first.inner_text()
    step_line = page.locator("[data-role=release-step]")
    assert "what changed from TE 2.19.0 on vm-h200" in step_line.inner_text()
    with page.expect_navigation():
        step_line.locator("a").click()
    assert page.locator("section.release-step[data-head='2.20.2']").is_visible()
    page.go_back()
    commit = page.locator("[data-role=run-commit]").inner_text()
    assert commit.startswith("none recorded: TE 2.20.2 was installed without its commit")
    assert "stand-in" in commit
    labels = page.eval_on_selector_all("dl.kv dt", "els => els.map(e => e.textContent.trim())")
    for label in ("Driver", "CUDA", "cublaslt", "driver", "cuda", "asv_env_name", "backend filter"):
        assert labels.count(label) == (1 if label in ("Driver", "CUDA") else 0), label
    assert "None" not in page.locator("dl.kv").first.inner_text()
    # the failing cases name the release their failure began in
    since = page.eval_on_selector_all(
        "#run-verdicts [data-role=since]", "els => els.map(e => e.textContent.split('run')[0].trim())"
    )
    assert since and set(since) <= {"since TE 2.18.0", "since TE 2.19.0", "since TE 2.20.2"}
    assert "since TE 2.19.0" in since  # CheckpointParity fp8
    assert not page.problems


def test_the_overview_fills_perf_from_the_newest_release_step_and_names_where_failures_began(releases, page):
    open_page(page, releases, "/?all=1")
    perf = page.eval_on_selector_all(
        "#cases [data-role=perf-release]", "els => els.map(e => e.textContent.trim())"
    )
    assert perf and set(perf) == {"TE 2.19.0 → 2.20.2"}
    regressed = page.locator("#cases tr[data-perf=regression]")
    assert regressed.count() >= 1
    parity = page.locator("#cases tr:has(a:text-is('contracts.CheckpointParity'))[data-status=fail_accuracy]")
    assert parity.count() == 2
    assert all("since TE 2.19.0" in parity.nth(i).inner_text() for i in range(2))
    assert STAND_IN[:10] not in page.locator("#cases").inner_text()
    assert not page.problems


def test_alerts_say_in_which_release_a_failure_began_and_in_which_it_passes_again(releases, page):
    open_page(page, releases, "/alerts", "release-alerts")
    live = page.locator("#live-alerts").inner_text()
    assert "failing since TE 2.19.0" in live and "failing since TE 2.18.0" in live
    history = page.locator("#alert-history").inner_text()
    assert "passes again since TE 2.19.0" in history
    assert not page.problems


def test_a_store_without_two_releases_has_no_releases_link_and_says_why(tmp_path, page):
    db_url = f"sqlite:///{tmp_path / 'tewatch.sqlite3'}"
    upgrade(db_url)
    [release] = release_runs(REPO_ROOT / RELEASE_HISTORY)[:1]
    load_runs(db_url, release.runs(), "main", commit_date=release.commit_date)
    server = start_server(db_url, tmp_path / "serve.log")
    try:
        page.goto(server.url + "/")
        assert page.locator("nav a:text-is('Releases')").count() == 0
        page.goto(server.url + "/releases?branch=main")
        assert "No two TE releases were measured on one branch and machine on main" in page.inner_text("main")
    finally:
        stop_server(server)

"""The case page's kernel table and the pull request page's Kernels section, in Chromium, on a real
`tewatch serve`: the kept H200 A/B rounds (tests/fixtures/h200-ab-rounds) with kernel tables added to two
records as the suites write them (tests/pipeline/test_kernels_report.py says which), the base uploaded on
main and the head as pull request 1. Screenshots go to test-output/screenshots/ (docs/screenshots/kernels/
keeps a copy)."""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from tests.conftest import LiveServer, served_sqlite
from tests.dashboards.conftest import SCREENSHOTS, screenshot
from tests.pipeline.test_kernels_report import AMAX, CAST, EXTRA, KEPT, _add_kernels
from tests.uploads import parts_of, post_run
from tewatch.ingest.discover import find_runs

PR = 1


@dataclass
class KernelSite:
    server: LiveServer
    quantize_case: int


def _commit_of(folder) -> str:
    [results] = [p for p in folder.glob("vm-h200/*.json") if p.name != "machine.json"]
    return json.loads(results.read_text())["commit_hash"]


@pytest.fixture(scope="module")
def kernel_site(tmp_path_factory) -> Iterator[KernelSite]:
    folder = tmp_path_factory.mktemp("kernels")
    base, head = folder / "base", folder / "head"
    shutil.copytree(KEPT / "base-results", base)
    shutil.copytree(KEPT / "head-results", head)
    _add_kernels(base, extra_pass=False, graph_breaks=2.0, compile_rounds=[1.62, 1.60])
    _add_kernels(head, extra_pass=True, graph_breaks=3.0, compile_rounds=[2.91, 2.88])
    store = folder / "store"
    store.mkdir()
    with served_sqlite(store) as (server, _):
        with server.client() as client:
            answer = post_run(client, parts_of(find_runs(base)[0]), branch="main")
            assert answer.status_code == 201, answer.text
            answer = post_run(
                client,
                parts_of(find_runs(head)[0]),
                branch="pr-1",
                pr_number=str(PR),
                merge_base_sha=_commit_of(base),
            )
            assert answer.status_code == 201, answer.text
            cases = client.get("/api/v1/cases", params={"case": "quantize.Quantize", "limit": 1000}).json()
        wanted = {"backend": "te", "shape": "4x2048x5120", "variant": "fp8-current"}
        [case_id] = [c["id"] for c in cases["items"] if c["params"] == wanted]
        yield KernelSite(server, case_id)


def test_the_case_page_shows_what_one_call_runs(kernel_site, page):
    page.goto(f"{kernel_site.server.url}/case/{kernel_site.quantize_case}")
    rows = page.query_selector_all("#kernel-table tbody tr")
    names = [row.query_selector("td").inner_text() for row in rows]
    assert names == [EXTRA, CAST, AMAX]
    shares = [float(row.query_selector_all("td")[3].inner_text().removesuffix(" %")) for row in rows]
    assert shares == sorted(shares, reverse=True) and sum(shares) == pytest.approx(100, abs=0.2)
    counts = page.inner_text("[data-role=kernel-counts]")
    assert "Launches per call\n4" in counts and "Syncs per call\n0" in counts
    assert "20 profiled calls" in page.inner_text("#kernels h2")
    assert page.problems == []
    screenshot(page, "kernels-case")


def _kernels_section(site: KernelSite, page) -> list[list[str]]:
    """The Kernels section's rows once detection has compared the pull request (it runs after the
    upload's answer): cells as text."""
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        page.goto(f"{site.server.url}/pr/{PR}")
        if page.query_selector("#pr-kernels tbody tr td") and page.query_selector("#pr-regressions"):
            return [
                [cell.inner_text() for cell in row.query_selector_all("td")]
                for row in page.query_selector_all("#pr-kernels tbody tr")
            ]
        time.sleep(1)
    raise AssertionError("the pull request's Kernels section did not appear within 180 s")


def test_the_pr_page_shows_the_kernels_section(kernel_site, page):
    rows = _kernels_section(kernel_site, page)
    whats = [row[1] for row in rows]
    assert whats[:3] == ["kernel set", "graph breaks", "compile time"]
    kernel_set = rows[0]
    assert "fp8-current" in kernel_set[0] and kernel_set[2] == (
        f"appeared: {EXTRA} (1 per call); launches per call 3 -> 4"
    )
    assert kernel_set[4] == "changed"
    assert rows[1][2] == "graph breaks 2 -> 3"
    assert rows[2][2] == "compile 1.61 s -> 2.9 s" and rows[2][4] == "regression"
    attributions = [row for row in rows if row[1] == "attribution"]
    assert any(row[2].startswith(f"{EXTRA} +") and "fp8-current" in row[0] for row in attributions)
    link = page.query_selector("#pr-kernels tbody tr td a")
    assert link is not None and link.get_attribute("href") == f"/case/{kernel_site.quantize_case}"
    assert page.problems == []
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.locator("div.table-wrap", has=page.locator("#pr-kernels")).screenshot(
        path=str(SCREENSHOTS / "kernels-pr.png")
    )

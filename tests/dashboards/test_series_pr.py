"""A pull request's regression, followed from the PR page to `/series/{id}?pr=N`, shows the evidence: the PR's
head samples drawn beside the default-branch history, and the stored comparison against the merge base. A real
server, real uploads of a real fixture run (the head with one case made twice as slow), Chromium."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from tests.conftest import LiveServer, served_sqlite
from tests.dashboards.conftest import screenshot
from tests.uploads import parts_of, post_run, tiny_run
from tewatch_dashboards.templating import NOISE_SOURCE_WORDS

PR = 515
SLOWER = "ops.Scale.time_scale"
SLOWDOWN = 2.0
# asv result columns that hold timings (scaled with the slowdown); the others are params, counts and metadata
TIMING_COLUMNS = ("result", "stats_ci_99_a", "stats_ci_99_b", "stats_q_25", "stats_q_75", "samples")


@dataclass
class SeriesPrSite:
    server: LiveServer
    head_samples: int  # samples of the slowed case in the head run


def _scaled(value, factor: float):
    if isinstance(value, list):
        return [_scaled(v, factor) for v in value]
    return value * factor if isinstance(value, float) else value


def _at_commit(parts: dict, commit: str, slowdown: float = 1.0) -> tuple[dict, int]:
    """A copy of the run at `commit`, the first params combination of SLOWER slowed by `slowdown`; and how many
    samples that combination has."""
    results = json.loads(parts["result"][0][1])
    results["commit_hash"] = commit
    columns = results["result_columns"]
    row = results["results"][SLOWER]
    samples = 0
    for name in TIMING_COLUMNS:
        column = row[columns.index(name)]
        column[0] = _scaled(column[0], slowdown)
        if name == "samples":
            samples = len(column[0] or [])
    parts["result"] = [(parts["result"][0][0], json.dumps(results).encode())]
    return parts, samples


@pytest.fixture(scope="module")
def series_pr_site(tmp_path_factory) -> Iterator[SeriesPrSite]:
    with served_sqlite(tmp_path_factory.mktemp("series-pr")) as (server, _):
        base_sha, head_sha = "ba5e" + "1" * 36, "feed" + "1" * 36
        base, _ = _at_commit(parts_of(tiny_run()), base_sha)
        head, samples = _at_commit(parts_of(tiny_run()), head_sha, SLOWDOWN)
        assert samples > 0
        with server.client() as client:
            answer = post_run(client, base, branch="main")
            assert answer.status_code == 201, answer.text
            answer = post_run(client, head, pr_number=str(PR), merge_base_sha=base_sha, branch="feature")
            assert answer.status_code == 201, answer.text
        yield SeriesPrSite(server, samples)


def _regression(site: SeriesPrSite) -> dict:
    """The PR's stored comparison of the slowed case (detection runs after the upload answers)."""
    with site.server.client() as client:
        for _ in range(100):
            answer = client.get(f"/api/v1/prs/{PR}/comparisons")
            if answer.status_code == 200:
                found = [c for c in answer.json() if c.get("verdict") == "regression"]
                if found:
                    return found[0]
            time.sleep(0.1)
    raise AssertionError(f"no regression compared for PR #{PR}: {answer.status_code} {answer.text[:500]}")


def test_pr_page_and_alerts_link_the_regression_to_the_series_with_the_pr(series_pr_site, page):
    comparison = _regression(series_pr_site)
    page.goto(f"{series_pr_site.server.url}/pr/{PR}")
    row = page.query_selector("#pr-verdicts tr[data-verdict='regression']")
    assert row is not None
    href = row.query_selector("a[href^='/series/']").get_attribute("href")
    assert href == f"/series/{comparison['series_id']}?pr={PR}"
    # so does the alerts page, for the regression alert detection opened for the PR
    page.goto(f"{series_pr_site.server.url}/alerts")
    assert page.locator(f"a[href='/series/{comparison['series_id']}?pr={PR}']").count() >= 1
    assert not page.problems, page.problems


def test_series_page_with_pr_draws_the_head_samples_and_the_comparison(series_pr_site, page):
    comparison = _regression(series_pr_site)
    series_id = comparison["series_id"]
    url = series_pr_site.server.url
    response = page.goto(f"{url}/series/{series_id}?pr={PR}")
    assert response is not None and response.status == 200
    page.wait_for_selector("#chart[data-ready='1']")
    screenshot(page, "series-with-pull-request")

    chart = page.locator("#chart")
    assert chart.get_attribute("data-points") == "1"  # the default-branch history: the base run
    assert chart.get_attribute("data-pr-points") == "1"
    assert chart.get_attribute("data-pr-samples") == str(series_pr_site.head_samples)
    assert (
        int(chart.get_attribute("data-pr-series") or 0) >= 2
    )  # PR median and PR samples, apart from the rest
    assert f"PR #{PR} head" in page.inner_text(".chart-tools")

    data = page.evaluate(f"fetch('/series/{series_id}/points.json?pr={PR}').then((r) => r.json())")
    assert [p["x"] for p in data["pr"]["points"]] == [data["total"]]  # after the history
    head = data["pr"]["points"][0]
    base = data["points"][0]
    assert head["value"] == pytest.approx(base["value"] * SLOWDOWN)
    assert data["pr"]["comparison"]["verdict"] == "regression"
    # one base run, no history: the noise is the runs' own spread, the floor or the benchmark's other cases
    source = data["pr"]["comparison"]["noise_source"]
    assert source in ("samples", "floor", "benchmark") and comparison["noise_source"] == source
    assert comparison["between_run_sigma"] == pytest.approx(data["pr"]["comparison"]["between_run_sigma"])
    assert NOISE_SOURCE_WORDS[source] in page.inner_text("#pr-sigma")

    panel = page.locator("#pr-comparison")
    assert panel.get_attribute("data-verdict") == "regression"
    assert page.inner_text("#pr-verdict") == "regression"
    effect = page.inner_text("#pr-effect")
    assert effect.startswith("+") and effect.endswith("%")
    assert "…" in page.inner_text("#pr-interval")
    text = panel.inner_text()
    assert "Base median" in text and "Head median" in text and "Between-run σ" in text
    assert not page.problems, page.problems

    # the SVG draws the PR too; without `pr`, neither the JSON nor the page mention it
    svg = page.request.get(f"{url}/series/{series_id}/plot.svg?pr={PR}")
    assert svg.status == 200 and f"PR #{PR} median" in svg.text()
    plain = page.request.get(f"{url}/series/{series_id}/points.json").json()
    assert "pr" not in plain and len(plain["points"]) == 1
    page.goto(f"{url}/series/{series_id}")
    page.wait_for_selector("#chart[data-ready='1']")
    assert page.locator("#pr-comparison").count() == 0
    assert page.locator("#chart").get_attribute("data-pr-points") is None

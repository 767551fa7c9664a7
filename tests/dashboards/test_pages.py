"""The dashboard in Chromium against a real service loaded through the upload API with real fixture runs."""

from __future__ import annotations

import json
import re

import httpx
import pytest

from tests.dashboards.conftest import (
    H200_FIXTURES,
    MARKUP,
    PR_NUMBER,
    PR_ONLY_EXCEPTION,
    TINY_REPO,
    screenshot,
)
from tests.dashboards.expectations import FAILURES, expected_matrix, latest_records
from tewatch_dashboards.routes.overview import PER_PAGE

pytestmark = pytest.mark.long_running

SEVERITY_OF_STATUS = {
    "error": 0,
    "fail_accuracy": 0,
    "timeout": 0,
    "oom": 0,
    "pass": 3,
    "": 4,
    "unsupported": 5,
}


def rows(page, table: str = "#cases") -> list[dict]:
    return page.eval_on_selector_all(
        f"{table} tbody tr[data-case-id]", "els => els.map(e => ({...e.dataset}))"
    )


def rows_on_every_page(page) -> list[dict]:
    """The overview's rows on the page open now and on each one after it, following its Next links."""
    found = rows(page)
    while (after := page.query_selector("nav.pager a[rel=next]")) is not None:
        with page.expect_navigation():
            after.click()
        found += rows(page)
    return found


def open_page(page, site, path: str, name: str | None = None):
    response = page.goto(site.url + path)
    assert response is not None and response.status == 200, f"{path}: {response and response.status}"
    assert "default-src 'self'" in response.headers.get("content-security-policy", ""), path
    page.wait_for_load_state("networkidle")
    if name:
        screenshot(page, name)
    return response


def test_every_page_answers_with_security_headers(site):
    with httpx.Client(base_url=site.url, timeout=30) as client:
        case_id = client.get("/").text.split('data-case-id="', 1)[1].split('"', 1)[0]
        paths = [
            "/",
            "/matrix",
            f"/case/{case_id}",
            "/runs",
            f"/runs/{site.pr_run_id}",
            "/machines",
            "/alerts",
            f"/pr/{PR_NUMBER}",
            "/case/999999",
            "/series/999999",
            "/static/tewatch.css",
            "/docs",
        ]
        for path in paths:
            answer = client.get(path)
            assert answer.status_code == (404 if "999999" in path else 200), path
            assert answer.headers["content-security-policy"].startswith("default-src 'self'"), path
            assert answer.headers["x-content-type-options"] == "nosniff", path
        assert client.get("/matrix", params={"world_size": "two"}).status_code == 400
        assert client.get("/runs", params={"page": "-1"}).status_code == 400


def test_pull_request_verdicts_stay_off_the_default_branch_pages(site):
    """The pull request's run is the newest upload, and one of its cases fails only there: the default-branch
    overview and matrix keep showing that case's verdict from the last default-branch run."""
    with httpx.Client(base_url=site.url, timeout=30) as client:
        on_branch = client.get("/", params={"branch": "feature", "q": PR_ONLY_EXCEPTION, "all": "1"}).text
        case_ids = re.findall(r'data-case-id="(\d+)" data-status="error"', on_branch)
        assert len(case_ids) == 1, "the pull request's branch should show its one PR-only failure"
        overview = client.get("/", params={"all": "1"}).text
        assert PR_ONLY_EXCEPTION not in overview
        assert f'data-case-id="{case_ids[0]}" data-status="pass"' in overview
        assert PR_ONLY_EXCEPTION not in client.get("/matrix").text
        assert PR_ONLY_EXCEPTION in client.get("/matrix", params={"branch": "feature"}).text
        # the API's latest verdict is the overview's: the same run's, not the pull request's
        latest = {v["case_id"]: v for v in client.get("/api/v1/verdicts/latest").json()}
        assert (
            latest[int(case_ids[0])]["status"] == "pass"
            and latest[int(case_ids[0])]["run_id"] != site.pr_run_id
        )
        on_pr_branch = client.get("/api/v1/verdicts/latest", params={"branch": "feature"}).json()
        assert {v["run_id"] for v in on_pr_branch} == {site.pr_run_id}


def test_overview_puts_failures_first_and_greys_unsupported(site, page):
    open_page(page, site, "/", "overview")
    for row in page.query_selector_all("#cases tbody tr[data-status=error]"):
        assert row.query_selector(".badge.st-fail") is not None
    listed = rows_on_every_page(page)
    latest = latest_records(site.runs)
    assert len(listed) >= len(latest)
    order = [SEVERITY_OF_STATUS.get(r["status"], 4) if not r["perf"] else 1 for r in listed]
    assert order == sorted(order), (
        "cases are not ordered failures, regressions, improvements, passes, unsupported"
    )
    statuses = {r["status"] for r in listed}
    assert statuses & FAILURES, "the fixtures hold failing cases; the overview shows none"
    unsupported = page.query_selector_all("#cases tbody tr[data-status=unsupported]")  # on the last page
    assert unsupported, "the fixtures hold unsupported cases; the last page shows none"
    for row in unsupported:
        assert "greyed" in row.get_attribute("class")
        assert row.query_selector(".badge.st-unsupported") is not None
    assert not page.problems, page.problems


def test_overview_pages_keep_every_failure_and_regression_on_the_first(site, page):
    """The overview comes in pages (it was one 17,000 px table): the first holds every correctness failure and
    performance regression, each page groups its cases under a heading per severity, and filters and the
    search carry from page to page."""
    open_page(page, site, "/?all=1")
    everything = rows(page)
    assert not page.query_selector("nav.pager a[rel=next]")
    open_page(page, site, "/", "overview-page-1")
    first = rows(page)
    assert len(first) < len(everything), "the fixtures fill more than one page"
    attention = [r["caseId"] for r in everything if r["status"] in FAILURES or r["perf"] == "regression"]
    assert attention and [r["caseId"] for r in first[: len(attention)]] == attention
    assert (
        page.eval_on_selector_all("#cases tr.group-head", "hs => hs.map(h => h.dataset.group)")[0]
        == "failure"
    )
    assert page.locator("#cases tr.group-head[data-group=failure]").inner_text().split()[-1] == str(
        sum(r["status"] in FAILURES for r in everything)
    )
    height = page.evaluate("document.documentElement.scrollHeight")
    assert height < 6000, f"page 1 is {height} px tall"
    assert [r["caseId"] for r in rows_on_every_page(page)] == [r["caseId"] for r in everything]
    assert page.query_selector("nav.pager a[rel=prev]") is not None
    assert "continued" in page.inner_text("#cases tr.group-head"), "the last page continues a group"

    backend = first[0]["backend"]
    open_page(page, site, "/?" + str(httpx.QueryParams({"page": 2})))
    with page.expect_navigation():
        page.select_option("select[name=backend]", backend)
    assert "page=" not in page.url, "a new filter starts again at page 1"
    narrowed = rows_on_every_page(page)
    assert narrowed and all(r["backend"] == backend for r in narrowed)
    assert {r["caseId"] for r in narrowed} == {r["caseId"] for r in everything if r["backend"] == backend}
    assert f"backend={backend}" in page.url

    needle = "linear.LinearFwdBwd"
    open_page(page, site, "/?" + str(httpx.QueryParams({"q": needle})))
    found = rows_on_every_page(page)
    assert len(found) > PER_PAGE, "the search should fill more than one page"
    assert f"q={needle}" in page.url and page.input_value("input[name=q]") == needle
    assert len(found) == len({r["caseId"] for r in found}), "a case on two pages"
    assert all(
        needle in text
        for text in page.eval_on_selector_all(
            "#cases tbody tr[data-case-id] a.case-link", "as => as.map(a => a.textContent)"
        )
    ), "the last page ignores q"

    answer = page.goto(site.url + "/?page=999")
    assert answer.status == 200 and "There is no page 999" in page.inner_text("main")
    assert page.goto(site.url + "/?page=0").status == 400
    assert not [p for p in page.problems if "400" not in p], page.problems


def test_filters_narrow_the_overview(site, page):
    open_page(page, site, "/?all=1")
    everything = rows(page)
    open_page(page, site, "/")
    for name, attribute in (("backend", "backend"), ("gpu", "gpu"), ("recipe", "recipe")):
        values = page.eval_on_selector_all(
            f"select[name={name}] option", "os => os.map(o => o.value).filter(v => v)"
        )
        for value in values:
            with page.expect_navigation():
                page.select_option(f"select[name={name}]", value)
            assert f"{name}=" in page.url
            shown = rows_on_every_page(page)
            assert shown, f"{name}={value} shows nothing"
            assert all(r[attribute] == value for r in shown), f"{name}={value} lets other cases through"
            expected = [r for r in everything if r[attribute] == value]
            assert {r["caseId"] for r in shown} == {r["caseId"] for r in expected}
            page.goto(site.url + "/")
    failing = page.query_selector("#cases tbody tr[data-status=error] .exc")
    assert failing is not None, "no failing case with an exception class in the fixtures"
    needle = failing.inner_text().strip()
    page.fill("input[name=q]", needle)
    with page.expect_navigation():
        page.press("input[name=q]", "Enter")
    found = rows(page)
    assert found and len(found) < len(everything)
    for row in page.query_selector_all("#cases tbody tr[data-case-id]"):
        assert needle.lower() in row.inner_text().lower()
    screenshot(page, "overview-search")
    assert not page.problems, page.problems


def test_case_page_shows_the_error_and_its_series(site, page):
    latest = latest_records(site.runs)
    failing = [r for r in latest.values() if r.status == "error" and r.verdict.get("exception_class")]
    assert failing, "the fixtures hold no error verdict"
    record = failing[0]
    open_page(page, site, "/?" + httpx.QueryParams({"q": record.verdict["exception_class"]}).__str__())
    page.click("#cases tbody tr[data-status=error] a.case-link")
    page.wait_for_load_state("networkidle")
    assert re.search(r"/case/\d+$", page.url)
    body = page.inner_text("main")
    assert record.verdict["exception_class"] in body
    screenshot(page, "case")
    assert page.query_selector("pre.trace") is not None or page.query_selector(".message") is not None
    assert not page.problems, page.problems


def test_series_page_draws_every_sample_with_point_details(site, page):
    open_page(page, site, "/")
    links = page.eval_on_selector_all(
        "#cases tbody tr[data-status=pass] td.num a", "as => as.map(a => a.href)"
    )
    chosen = None
    for href in links:
        data = page.request.get(href + "/points.json?last=all").json()
        if any(p["samples"] for p in data["points"]) and data["points"][-1]["gpu"]:
            chosen = (href, data)
            break
    assert chosen, "no passing case with a sampled timing series and a GPU state in the fixtures"
    href, data = chosen
    open_page(page, site, href.removeprefix(site.url))
    page.wait_for_selector("#chart[data-ready='1']")
    assert not data["aggregated"]
    assert int(page.get_attribute("#chart", "data-points")) == len(data["points"])
    assert int(page.get_attribute("#chart", "data-samples")) == sum(len(p["samples"]) for p in data["points"])
    assert page.query_selector("#chart canvas") is not None
    box = page.query_selector("#chart .u-over").bounding_box()
    page.mouse.move(box["x"] + box["width"] - 2, box["y"] + box["height"] / 2)
    page.wait_for_function("document.querySelector('#point-info dl') !== null")
    info = page.inner_text("#point-info")
    assert "Commit" in info and "Run" in info and "GPU state" in info and "Verdict" in info
    # the commit as people know it: TE's version where the run is filed under the version's stand-in hash
    newest = data["points"][-1]
    assert newest["commit"] in info
    if newest["commit"].startswith("TE "):
        assert newest["sha"][:7] not in info
    screenshot(page, "series")
    series_id = href.rsplit("/", 1)[1]
    svg = page.request.get(f"{site.url}/series/{series_id}/plot.svg")
    assert svg.status == 200 and svg.headers["content-type"].startswith("image/svg+xml")
    assert "<svg" in svg.text()
    assert "commit (oldest → newest)" in svg.text()
    assert data["points"][-1]["sha"][:7] in svg.text() or "TE " in svg.text(), "the x axis names no commit"
    assert svg.headers["content-security-policy"].startswith("default-src 'none'"), (
        "an SVG may never run script"
    )
    assert not page.problems, page.problems


def test_matrix_places_every_fixture_case(site, page):
    open_page(page, site, "/matrix", "matrix")
    expected = expected_matrix(site.runs)
    for cell in expected.values():
        column_attr = f"[data-mode='{cell.column}']" if cell.rank else f"[data-check='{cell.column}']"
        if cell.rank and cell.column not in ("eager", "default", "reduce-overhead", "max-autotune"):
            column_attr = f"[data-check='{cell.column}'][data-rank='{cell.rank}']"
        elif cell.rank:
            column_attr += f"[data-rank='{cell.rank}']"
        selector = (
            f"section.matrix-block[data-gpu='{cell.gpu_model}'] td.cell{column_attr}"
            f"[data-recipe='{cell.recipe}'][data-backend='{cell.backend}']"
        )
        found = page.query_selector(selector)
        assert found is not None, f"no matrix cell for {cell}"
        assert found.get_attribute("data-status") == cell.status, cell
        for exc in cell.exception_classes:
            if cell.status in FAILURES:
                assert exc in found.inner_text() or exc in (
                    found.query_selector("a").get_attribute("title") or ""
                )
    assert not page.problems, page.problems


def test_matrix_shows_h200_contract_failures_and_cpu_round_trip_error(site, page):
    assert H200_FIXTURES.is_dir()
    latest = latest_records(site.runs)  # every fixture run, in upload order: the newest verdict counts
    contract = [r for r in latest.values() if r.labels.get("op") == "shape_contract" and r.status in FAILURES]
    ranks = {r.labels.get("rank", r.params.get("rank")) for r in contract}
    assert {3, 4} <= ranks, f"the H200 fixtures should fail the shape contract at 3D and 4D, got {ranks}"
    round_trip = [
        r for r in latest.values() if r.labels.get("op") == "cpu_round_trip" and r.status == "error"
    ]
    assert round_trip, "the H200 fixtures should hold the CPU round-trip error"
    gpu = contract[0].gpu_model
    open_page(page, site, "/matrix?" + str(httpx.QueryParams({"gpu": gpu})), "matrix-h200")
    section = f"section.matrix-block[data-gpu='{gpu}']"
    for r in contract:
        rank = r.labels.get("rank", r.params.get("rank"))
        cell = page.query_selector(
            f"{section} td.cell[data-check='shape_contract'][data-rank='{rank}']"
            f"[data-recipe='{r.labels['recipe']}']"
        )
        assert cell is not None and cell.get_attribute("data-status") in FAILURES
    for r in round_trip:
        cell = page.query_selector(
            f"{section} td.cell[data-check='cpu_round_trip'][data-recipe='{r.labels['recipe']}']"
            f"[data-backend='{r.labels['backend']}']"
        )
        assert cell is not None and cell.get_attribute("data-status") == "error"
        assert r.verdict["exception_class"] in cell.inner_text()
        cell.click()
        page.wait_for_load_state("networkidle")
        assert r.verdict["exception_class"] in page.inner_text("main")
        page.go_back()
    assert not page.problems, page.problems


EXCEPTION_LINES = """els => els.map(e => {
  const words = [...e.childNodes].filter(n => n.nodeType === Node.TEXT_NODE && n.textContent);
  const rects = words.map(n => { const r = document.createRange(); r.selectNodeContents(n); return r.getClientRects(); });
  return {text: e.textContent, words: words.map(n => n.textContent),
          split: words.filter((n, i) => rects[i].length > 1).map(n => n.textContent),
          lines: new Set(rects.map(r => Math.round(r[0].top))).size, overflows: e.scrollWidth > e.clientWidth + 1};
})"""


def test_matrix_wraps_exception_classes_between_words(site, page):
    """Exception classes in the narrow matrix cells wrap between their camel-case words, never inside one."""
    open_page(page, site, "/matrix")
    shown = page.eval_on_selector_all("table.matrix .cell-exc", EXCEPTION_LINES)
    assert shown, "the fixtures' matrix shows no exception class"
    for cell in shown:
        assert not cell["split"], f"{cell['text']}: {cell['split']} broken across lines"
        assert not cell["overflows"], f"{cell['text']} runs out of its cell"
    wrapped = {cell["text"]: cell for cell in shown if cell["lines"] > 1}
    assert "ShapeContractMismatch" in wrapped, "the H200 shape-contract failure should need several lines"
    assert wrapped["ShapeContractMismatch"]["words"] == ["Shape", "Contract", "Mismatch"]
    assert not page.problems, page.problems


def test_markup_from_uploads_renders_as_text(site, page):
    open_page(page, site, "/?q=tewatchPwned", "markup")
    text = page.inner_text("#cases")
    assert MARKUP in text, "the benchmark name with markup is not shown as text"
    if site.markup_message:
        assert site.markup_message in text
    assert page.evaluate("window.tewatchPwned") is None
    scripts = page.eval_on_selector_all("script", "ss => ss.map(s => s.textContent + (s.src || ''))")
    assert not [s for s in scripts if "tewatchPwned" in s]
    page.click("#cases tbody tr a.case-link >> text=tewatchPwned")
    page.wait_for_load_state("networkidle")
    assert MARKUP.split("<", 1)[0] in page.inner_text("h1") or "tewatchPwned" in page.inner_text("h1")
    assert MARKUP in page.inner_text("main")
    series_link = page.query_selector("main table.data a[href^='/series/']")
    if series_link:
        series_link.click()
        page.wait_for_selector("#chart[data-ready='1']")
        assert MARKUP in page.inner_text("h1")
        svg = page.request.get(page.url.split("?")[0] + "/plot.svg").text()
        assert "<script" not in svg
    assert page.evaluate("window.tewatchPwned") is None
    assert not page.problems, page.problems


def test_pull_request_page_lists_its_runs_and_sorts_by_effect(site, page):
    open_page(page, site, f"/pr/{PR_NUMBER}", "pull-request")
    assert str(PR_NUMBER) in page.inner_text("h1")
    assert page.query_selector(f"#pr-runs a[href='/runs/{site.pr_run_id}']") is not None
    verdict_rows = page.query_selector_all("#pr-verdicts tbody tr")
    if verdict_rows:
        with page.expect_navigation():
            page.click("#pr-verdicts th a:has-text('Effect')")
        assert "sort=effect" in page.url
        effects = [
            abs(float(e))
            for e in page.eval_on_selector_all(
                "#pr-verdicts tbody tr", "rs => rs.map(r => r.dataset.effect).filter(e => e !== '')"
            )
        ]
        assert effects == sorted(effects, reverse=True)
    assert page.goto(f"{site.url}/pr/{PR_NUMBER + 1}").status == 404
    assert not [p for p in page.problems if "404" not in p], page.problems


def test_alert_actions_need_a_token(site, page):
    open_page(page, site, "/alerts")
    live = page.query_selector_all("#live-alerts tbody tr[data-alert-id]")
    assert live, "the fixtures' failing verdicts raised no alert"
    first = live[0]
    alert_id = first.get_attribute("data-alert-id")
    first.query_selector("button[data-action=acknowledge]").click()
    assert "token" in page.inner_text("#alert-flash").lower()
    page.fill("#api-token", "not-a-token")
    first.query_selector("button[data-action=acknowledge]").click()
    page.wait_for_selector("#alert-flash.err >> text=401")
    page.fill("#api-token", site.server.token)
    first.query_selector("button[data-action=acknowledge]").click()
    page.wait_for_selector("#alert-flash.ok")
    assert first.query_selector("[data-role=status]").inner_text() == "acknowledged"
    if len(live) > 1:
        second_id = live[1].get_attribute("data-alert-id")
        live[1].query_selector("button[data-action=dismiss]").click()
        page.wait_for_selector(f"#alert-flash.ok >> text=Alert {second_id} dismissed")
    screenshot(page, "alerts-acted")
    open_page(page, site, "/alerts", "alerts")
    row = page.query_selector(f"#live-alerts tr[data-alert-id='{alert_id}'] [data-role=status]")
    assert row is not None and row.inner_text() == "acknowledged"
    if len(live) > 1:
        assert page.query_selector(f"#live-alerts tr[data-alert-id='{second_id}']") is None
        assert second_id in page.inner_text("#alert-history")
    problems = [p for p in page.problems if "401" not in p]
    assert not problems, problems


def test_runs_and_machines_show_the_software_stack(site, page):
    open_page(page, site, "/runs", "runs")
    listed = page.query_selector_all("#runs tbody tr")
    assert len(listed) == len(site.answers) + 2
    run = site.runs[0]
    stack = json.loads(run.run.read_text())["versions"] if run.run else {}
    machine = json.loads(run.machine.read_text())
    open_page(page, site, f"/runs/{site.answers[0]['run_id']}", "run")
    body = page.inner_text("main")
    for key in ("torch", "te"):
        if stack.get(key):
            assert stack[key] in body, key
    if machine.get("gpu_model"):
        assert machine["gpu_model"] in body
    open_page(page, site, "/machines", "machines")
    names = page.inner_text("#machines")
    assert machine.get("machine", "") in names
    for key in ("driver", "cuda"):
        if machine.get(key):
            assert machine[key] in names
    assert not page.problems, page.problems


def test_api_docs_render_operations_from_the_package(site, page):
    """/docs is Swagger UI from the package (no CDN: air-gapped clusters have docs too), under the pages' CSP."""
    requested = []
    page.on("request", lambda r: requested.append(r.url))
    open_page(page, site, "/docs")
    page.wait_for_selector("#swagger-ui .opblock")
    paths = page.eval_on_selector_all(
        ".opblock-summary-path", "ps => ps.map(p => p.dataset.path || p.innerText)"
    )
    assert "/api/v1/runs" in paths and "/api/v1/verdicts/latest" in paths, paths
    assert "/" not in paths and "/docs" not in paths, "the pages are not API operations"
    health = page.locator(".opblock", has=page.locator(".opblock-summary-path[data-path='/api/v1/health']"))
    health.locator(".opblock-summary").click()
    health.locator("button.try-out__btn").click()
    health.locator("button.execute").click()
    page.wait_for_selector(".live-responses-table .response-col_status >> text=200")
    screenshot(page, "api-docs")
    outside = [url for url in requested if not url.startswith(site.url)]
    assert not outside, f"the docs page loaded from elsewhere: {outside}"
    assert not page.problems, page.problems


def test_series_tooltip_leaves_out_the_gpu_state_where_none_was_recorded(site, page):
    """The contract checks time nothing on the GPU: their points carry no GPU state, and the tooltip says
    nothing about one (it used to show "GPU state: throttle:")."""
    cases = page.request.get(f"{site.url}/api/v1/cases?case=contracts.ShapeContract").json()["items"]
    assert cases, "the fixtures hold shape-contract cases"
    series_id = cases[0]["series"][0]["id"]
    data = page.request.get(f"{site.url}/series/{series_id}/points.json?last=all").json()
    assert data["points"] and all(p["gpu"] == {} for p in data["points"])
    open_page(page, site, f"/series/{series_id}")
    page.wait_for_selector("#chart[data-ready='1']")
    box = page.query_selector("#chart .u-over").bounding_box()
    page.mouse.move(box["x"] + box["width"] - 2, box["y"] + box["height"] / 2)
    page.wait_for_function("document.querySelector('#point-info dl') !== null")
    info = page.inner_text("#point-info")
    assert "Commit" in info and "Verdict" in info
    assert "GPU state" not in info and "throttle" not in info, info
    screenshot(page, "series-contract")
    assert not page.problems, page.problems


def test_machines_name_the_last_started_run_at_the_time_runs_shows(site, page):
    """/machines' last run is the run of that machine that started last, at its start time, as /runs shows it
    (it used to show the newest upload's upload time)."""
    runs = page.request.get(f"{site.url}/api/v1/runs?limit=1000").json()["items"]
    latest: dict[int, dict] = {}
    for run in runs:
        key = (run["started_at"] or run["uploaded_at"], run["id"])
        mid = run["machine_id"]
        if mid not in latest or key > (
            latest[mid]["started_at"] or latest[mid]["uploaded_at"],
            latest[mid]["id"],
        ):
            latest[mid] = run
    assert any(
        max(r["id"] for r in runs if r["machine_id"] == mid) != run["id"] for mid, run in latest.items()
    ), "the fixtures should upload some machine's last-started run before another of its runs"
    open_page(page, site, "/runs")
    assert page.inner_text("#runs thead th:nth-child(2)") == "Started"
    started_on_runs = dict(
        page.eval_on_selector_all(
            "#runs tbody tr",
            "rs => rs.map(r => [r.querySelector('a').textContent, "
            "r.querySelector('[data-role=started]').innerText])",
        )
    )
    open_page(page, site, "/machines", "machines")
    assert page.inner_text("#machines thead th:last-child") == "Last run, started"
    for mid, run in latest.items():
        cell = page.query_selector(f"#machines tr[data-machine-id='{mid}'] [data-role=last-run]")
        assert cell is not None, mid
        link = cell.query_selector("a").inner_text()
        assert link == f"#{run['id']}", f"machine {mid}: last started run is #{run['id']}, shown {link}"
        assert cell.inner_text().removeprefix(link).strip() == started_on_runs[link]
        assert run["started_at"] is None or "uploaded" not in cell.inner_text()
    assert not page.problems, page.problems


def test_runs_name_a_release_filed_without_its_commit_as_such(site, page):
    stand_ins = {
        json.loads(r.run.read_text())["versions"]["te"]
        for r in site.runs
        if r.run and json.loads(r.run.read_text()).get("commit_source") == "te_version_hash"
    }
    assert stand_ins, "the H200 fixtures are filed under their TE version's stand-in"
    open_page(page, site, "/runs", "runs")
    commits = page.query_selector_all("#runs tbody [data-role=commit]")
    texts = {c.inner_text() for c in commits}
    for version in stand_ins:
        [shown] = [c for c in commits if c.inner_text() == f"TE {version} (no commit)"][:1]
        assert "stand-in" in shown.get_attribute("title")
    assert all(t for t in texts)
    assert not page.problems, page.problems


def test_the_header_names_te_nvfp4_when_te_suites_are_loaded(site, page):
    open_page(page, site, "/runs")
    assert page.inner_text(".brand-sub") == "TE NVFP4 benchmarks"
    assert "Compile vs eager" in page.inner_text("nav.nav")


def test_runs_name_their_repository_and_filter_by_it(site):
    tiny = [run for run in site.runs if "asv-tiny" in run.result.parts]
    with httpx.Client(base_url=site.url, timeout=30) as client:
        every = client.get("/runs").text
        assert f'<option value="{TINY_REPO}" >{TINY_REPO}</option>' in every
        only = client.get("/runs", params={"repo": TINY_REPO}).text
    assert f"{len(tiny)} uploaded runs" in only
    assert only.count('data-role="repo"') == len(tiny) and only.count(f">{TINY_REPO}</div>") == len(tiny)


FITS = """() => {
  const doc = document.documentElement;
  const tables = [...document.querySelectorAll('table.data, table.matrix')].map(t => {
    const wrap = t.parentElement.closest('.table-wrap, .scroll-x') || t.parentElement;
    const box = wrap.getBoundingClientRect();
    return {id: t.id || t.dataset.part || '', overflow: t.getBoundingClientRect().width - wrap.clientWidth,
            wrapRight: box.right};
  });
  const nav = [...document.querySelectorAll('header .nav a, header .brand, header .jump input')].map(a => {
    const box = a.getBoundingClientRect();
    return {text: a.textContent.trim(), left: box.left, right: box.right, visible: box.width > 0};
  });
  return {page: doc.scrollWidth - window.innerWidth, tables, nav, width: window.innerWidth};
}"""
WIDTH_PAGES = ("/", "/matrix", "/alerts", "/runs", "/machines", f"/pr/{PR_NUMBER}")


def page_at(browser, width: int):
    context = browser.new_context(viewport={"width": width, "height": 900})
    return context, context.new_page()


def laid_out_pages(site, page, width: int):
    """Each of WIDTH_PAGES loaded at `width`, none wider than the window: (path, what FITS measured); each
    page's screenshot is taken once the caller's checks of it pass."""
    for path in WIDTH_PAGES:
        page.goto(site.url + path)
        page.wait_for_load_state("networkidle")
        fits = page.evaluate(FITS)
        assert fits["page"] <= 0, (path, fits["page"])
        yield path, fits
        screenshot(page, f"width-{width}{path.replace('/', '-').rstrip('-') or '-overview'}")


def test_at_1280_px_every_table_fits_and_the_matrix_shows_its_per_recipe_checks(site, browser):
    context, page = page_at(browser, 1280)
    try:
        for path, fits in laid_out_pages(site, page, 1280):
            too_wide = [t for t in fits["tables"] if t["overflow"] > 1]
            assert not too_wide, (path, too_wide)
        page.goto(site.url + "/matrix")
        for op in ("cpu_round_trip", "checkpoint", "dcp_round_trip"):
            cells = page.query_selector_all(f"table.matrix td.cell[data-check='{op}']")
            assert cells, op
            boxes = [cell.bounding_box() for cell in cells]
            assert all(box and box["x"] >= 0 and box["x"] + box["width"] <= 1280 for box in boxes), op
        page.goto(site.url + "/")
        header = page.query_selector("#cases thead th:last-child")
        assert header.inner_text() == "Commit" and header.bounding_box()["x"] + 10 < 1280
    finally:
        context.close()


def test_at_390_px_the_navigation_wraps_and_wide_tables_scroll_in_their_panel(site, browser):
    context, page = page_at(browser, 390)
    try:
        for path, fits in laid_out_pages(site, page, 390):
            clipped = [n for n in fits["nav"] if not n["visible"] or n["left"] < 0 or n["right"] > 390]
            assert not clipped, (path, clipped)
            assert all(t["wrapRight"] <= 390 for t in fits["tables"]), (path, fits["tables"])
        nav = [a.inner_text() for a in page.query_selector_all("header .nav a")]
        assert nav == ["Overview", "Compile vs eager", "Alerts", "Runs", "Machines"]
    finally:
        context.close()


AXIS = """() => {
  const el = document.getElementById('chart');
  const u = el.tewatch.plot, x = u.axes[0], y = u.axes[1];
  u.ctx.font = x.font[0];
  const width = (label) => Math.max(0, ...String(label || '').split('\\n').map((l) => u.ctx.measureText(l).width));
  const right = x._splits.map((split, i) => u.valToPos(split, 'x', true) + width(x._values[i]) / 2);
  return {xLabels: x._values, lastRight: Math.max(...right), canvas: u.ctx.canvas.width, yLabels: y._values,
          linear: el.tewatch.yTickLabels([0, 0.0005, 0.001, 0.0015], 'seconds', false),
          unlabelled: el.tewatch.yTickLabels([null, 0.002, null], 'seconds', true)};
}"""


def test_series_axes_label_every_tick_in_one_unit_and_draw_the_last_commit_whole(site, page):
    open_page(page, site, "/")
    href = page.eval_on_selector("#cases tbody tr[data-status=pass] td.num a", "a => a.href")
    for scale in ("linear", "log"):
        open_page(page, site, href.removeprefix(site.url) + ("?scale=log" if scale == "log" else ""))
        page.wait_for_selector("#chart[data-ready='1']")
        axis = page.evaluate(AXIS)
        assert axis["xLabels"] and axis["lastRight"] <= axis["canvas"], (scale, axis)
        assert all("—" not in label for label in axis["yLabels"]), (scale, axis["yLabels"])
        units = {label.split()[-1] for label in axis["yLabels"] if label}
        assert units and (scale == "log" or len(units) == 1), axis["yLabels"]
    assert axis["linear"] == ["0 ms", "0.5 ms", "1 ms", "1.5 ms"]
    assert axis["unlabelled"] == ["", "2.00 ms", ""]
    assert not page.problems, page.problems

"""The memory and numerics views in Chromium: the matrix's memory toggle, the case page's memory and
numerics tables with the tolerance drawn on the error plots, and series pages of bytes and of error values;
against a real `tewatch serve` loaded through the upload API with the kept H200 memory and numerics
campaign (tests/fixtures/h200-memnum-ab): the base, the A/A arm and the perturbed head as three runs on
main, in that order, so that the newest run's changes are the perturbations'. The arms ran one after the
other (base, head, A/A) under commits of one date; here each arm's commit is dated an hour after the one
before it, which sets that order (nothing else of the results is changed)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.conftest import FIXTURES, LiveServer, served_sqlite
from tests.dashboards.conftest import screenshot
from tests.dashboards.test_pages import FITS, page_at
from tests.uploads import parts_of, post_run
from tewatch.ingest.discover import find_runs
from tewatch_dashboards.templating import format_bytes

CAMPAIGN = FIXTURES / "h200-memnum-ab"
ARMS = ("base", "aa", "head")
MIB = 2**20


def records(arm: str) -> list[dict]:
    folder = next((CAMPAIGN / f"{arm}-results").rglob("cases"))
    return [json.loads(path.read_text()) for path in sorted(Path(folder).glob("*.json"))]


def metric(record: dict, name: str) -> float | None:
    found = record.get("metrics", {}).get(name)
    return found["value"] if found else None


def find(arm: str, case: str, **labels: object) -> dict:
    (found,) = [
        r
        for r in records(arm)
        if r["case"] == case and all(r["labels"].get(k) == v for k, v in labels.items())
    ]
    return found


def arm_in_order(arm: str, hour: int) -> dict[str, list[tuple[str, bytes]]]:
    """The arm's upload with its commit dated `hour` hours after the campaign's date."""
    (run,) = find_runs(CAMPAIGN / f"{arm}-results")
    parts = parts_of(run)
    name, content = parts["result"][0]
    result = json.loads(content)
    result["date"] += hour * 3600 * 1000
    parts["result"] = [(name, json.dumps(result).encode())]
    return parts


@pytest.fixture(scope="module")
def memnum(tmp_path_factory) -> Iterator[LiveServer]:
    with served_sqlite(tmp_path_factory.mktemp("memviews")) as (server, _):
        with server.client() as client:
            for hour, arm in enumerate(ARMS):
                answer = post_run(client, arm_in_order(arm, hour), branch="main")
                assert answer.status_code == 201, answer.text
        yield server


def case_id_of(server: LiveServer, case: str, **labels: object) -> int:
    """The id of the one case named `case` whose labels hold `labels`, as the API lists it."""
    with httpx.Client(base_url=server.url, timeout=30) as client:
        items = client.get("/api/v1/cases", params={"case": case, "limit": 500}).json()["items"]
    (found,) = [c for c in items if all(c["labels"].get(k) == v for k, v in labels.items())]
    return found["id"]


def series_of(server: LiveServer, case_id: int, metric_name: str) -> int:
    with httpx.Client(base_url=server.url, timeout=30) as client:
        items = client.get("/api/v1/cases", params={"limit": 500}).json()["items"]
    (case,) = [c for c in items if c["id"] == case_id]
    (found,) = [s["id"] for s in case["series"] if s["benchmark"].endswith("." + metric_name)]
    return found


def open_ok(page, url: str) -> None:
    response = page.goto(url)
    assert response is not None and response.status == 200, url
    page.wait_for_load_state("networkidle")


def test_the_matrix_toggles_to_each_cells_peak_allocated_bytes(memnum, page):
    open_ok(page, memnum.url + "/matrix")
    assert page.get_attribute("#view-time", "aria-current") == "page"
    assert page.query_selector_all("table.matrix .cell-bytes") == []
    with page.expect_navigation():
        page.click("#view-memory")
    page.wait_for_load_state("networkidle")
    assert "view=memory" in page.url
    screenshot(page, "memory-matrix")
    cells = page.eval_on_selector_all(
        "table.matrix[data-part=grid] td.cell[data-mode]",
        "tds => tds.map(td => ({...td.dataset, note: td.querySelector('.cell-bytes')?.textContent || ''}))",
    )
    head = {
        (r["labels"].get("recipe"), r["labels"].get("rank"), r["labels"].get("mode")): metric(
            r, "peak_allocated_bytes"
        )
        for r in records("head")
        if r["labels"].get("mode")
    }
    shown = [c for c in cells if c.get("peakBytes")]
    assert len(shown) >= 6, cells
    for cell in shown:
        expected = head[(cell["recipe"], int(cell["rank"]), cell["mode"])]
        assert float(cell["peakBytes"]) == expected
        assert cell["note"] == format_bytes(expected) and cell["note"].endswith(("MiB", "GiB")), cell
    # the filters keep the view, and the view is undone by its other button
    with page.expect_navigation():
        page.click("form.filters button[type=submit]")
    assert "view=memory" in page.url
    with page.expect_navigation():
        page.click("#view-time")
    assert "view=" not in page.url
    assert page.query_selector_all("table.matrix .cell-bytes") == []
    assert not page.problems, page.problems


def test_an_unknown_matrix_view_is_a_400_and_a_view_makes_one_cache_entry(memnum):
    with httpx.Client(base_url=memnum.url, timeout=30) as client:
        answer = client.get("/matrix", params={"view": "<b>bytes</b>" * 100})
        assert answer.status_code == 400 and "view must be one of time, memory" in answer.text
        assert "<b>" not in answer.text
        first = client.get("/matrix", params={"view": "memory", "unknown": "1"}).text
        second = client.get("/matrix", params={"view": "memory", "unknown": "2"}).text
    assert 'href="?view=memory"' in first and "unknown" not in first
    assert first.split("<footer")[0] == second.split("<footer")[0]


def test_the_case_page_tables_memory_against_the_run_before(memnum, page):
    gemm = case_id_of(memnum, "gemm.Gemm", recipe="fp8-current")
    open_ok(page, f"{memnum.url}/case/{gemm}")
    rows = page.eval_on_selector_all(
        "#memory-table tbody tr",
        "trs => trs.map(tr => ({...tr.dataset, cells: [...tr.cells].map(td => td.textContent.trim())}))",
    )
    by_metric = {r["metric"]: r for r in rows}
    assert list(by_metric)[:3] == ["setup_allocated_bytes", "peak_allocated_bytes", "peak_reserved_bytes"]
    for name in ("setup_allocated_bytes", "peak_allocated_bytes"):
        head = metric(find("head", "gemm.Gemm", recipe="fp8-current"), name)
        before = metric(find("aa", "gemm.Gemm", recipe="fp8-current"), name)
        assert head is not None and before is not None
        assert float(by_metric[name]["change"]) == head - before == 64 * MIB  # the extra workspace
        assert by_metric[name]["cells"][3].startswith("+64 MiB (+")
        assert by_metric[name]["cells"][1] == format_bytes(head)
    screenshot(page, "memory-case-gemm")

    linear = case_id_of(memnum, "linear.LinearFwdBwd", recipe="fp8-current", mode="eager", rank=2)
    open_ok(page, f"{memnum.url}/case/{linear}")
    leak = page.eval_on_selector(
        "#memory-table tr[data-metric=leak_bytes_per_step]", "tr => [...tr.cells].map(td => td.textContent)"
    )
    assert leak[1].split() == ["1", "MiB/step", "±", "0", "B/step"]  # the perturbation's 1 MiB a step
    assert leak[2] == "0 B/step" and leak[3] == "+1 MiB/step"
    steady = page.get_attribute("#memory-table tr[data-metric=steady_allocated_bytes]", "data-change")
    assert steady and float(steady) > 0
    assert not page.problems, page.problems


def test_the_case_page_shows_error_values_and_draws_their_tolerance(memnum, page):
    linear = case_id_of(memnum, "linear.LinearFwdBwd", recipe="fp8-current", mode="eager", rank=2)
    open_ok(page, f"{memnum.url}/case/{linear}")
    rows = page.eval_on_selector_all(
        "#numerics-table tbody tr",
        "trs => trs.map(tr => ({...tr.dataset, cells: [...tr.cells].map(td => td.textContent.trim())}))",
    )
    by_metric = {r["metric"]: r for r in rows}
    head = find("head", "linear.LinearFwdBwd", recipe="fp8-current", mode="eager", rank=2)
    before = find("aa", "linear.LinearFwdBwd", recipe="fp8-current", mode="eager", rank=2)
    output = by_metric["output_vs_fp32_rel_l2"]
    # the verdict's check holds output vs fp32 to 0.1, its further checks dgrad and wgrad
    assert {m: float(r["tolerance"]) for m, r in by_metric.items() if r["tolerance"]} == {
        "output_vs_fp32_rel_l2": 0.1,
        "dgrad_vs_fp32_rel_l2": 0.1,
        "wgrad_vs_fp32_rel_l2": 0.1,
    }
    value, old = metric(head, "output_vs_fp32_rel_l2"), metric(before, "output_vs_fp32_rel_l2")
    assert value is not None and old is not None
    assert output["cells"][0] == "rel-L2 of output vs fp32"
    assert output["cells"][1] == f"{value:.4g}" and output["cells"][2] == f"{old:.4g}"
    assert output["cells"][3] == f"{(value / old - 1) * 100:+.1f} %"  # the 1 % input shift's drift
    assert output["cells"][5] == f"{value / 0.1 * 100:.0f} %"
    assert by_metric["output_vs_fp32_sqnr_db"]["cells"][1].endswith(" dB")
    plots = page.eval_on_selector_all(
        "#numerics figure img", "imgs => imgs.map(i => ({src: i.src, width: i.naturalWidth}))"
    )
    assert len(plots) == 3 and all(p["width"] > 0 for p in plots), plots
    with httpx.Client(timeout=30) as client:
        svg = client.get(plots[0]["src"]).text
    assert "tolerance of its check" in svg
    screenshot(page, "numerics-case-linear")
    assert not page.problems, page.problems


def test_a_bytes_series_reads_in_mib_with_the_unit_on_its_axis(memnum, page):
    gemm = case_id_of(memnum, "gemm.Gemm", recipe="fp8-current")
    series = series_of(memnum, gemm, "setup_allocated_bytes")
    open_ok(page, f"{memnum.url}/series/{series}")
    page.wait_for_selector("#chart[data-ready='1']")
    chart = page.evaluate(
        "() => { const el = document.getElementById('chart'); const y = el.tewatch.plot.axes[1];"
        " return {title: el.dataset.yTitle, labels: y._values, points: el.dataset.points,"
        " fmt: [el.tewatch.fmt(1073741824, 'bytes'), el.tewatch.fmt(1048576, 'bytes/step'),"
        " el.tewatch.fmt(1000 * 1048576, 'bytes')]}; }"
    )
    assert chart["points"] == "3"
    assert chart["title"] == "MiB", chart
    assert {label.split()[-1] for label in chart["labels"] if label} == {"MiB"}, chart
    assert chart["fmt"] == ["1.00 GiB", "1.00 MiB/step", "0.977 GiB"]
    assert page.is_hidden("#tolerance-legend")
    screenshot(page, "memory-series-gemm-setup")
    with httpx.Client(base_url=memnum.url, timeout=30) as client:
        svg = client.get(f"/series/{series}/plot.svg").text
    assert ">MiB<" in svg or "MiB</text>" in svg
    assert not page.problems, page.problems


def test_an_error_series_draws_its_checks_tolerance(memnum, page):
    linear = case_id_of(memnum, "linear.LinearFwdBwd", recipe="fp8-current", mode="eager", rank=2)
    series = series_of(memnum, linear, "output_vs_fp32_rel_l2")
    open_ok(page, f"{memnum.url}/series/{series}")
    page.wait_for_selector("#chart[data-ready='1']")
    assert page.get_attribute("#chart", "data-tolerance") == "3"
    assert page.is_visible("#tolerance-legend")
    assert page.get_attribute("#chart", "data-y-distr") == "1"  # 0.0375 -> 0.0427 spans no decade
    assert page.inner_text("#scale-toggle") == "Log scale"
    ys = page.evaluate("() => document.getElementById('chart').tewatch.plot.scales.y")
    assert ys["min"] <= 0.1 <= ys["max"]  # the tolerance is inside the drawn range
    screenshot(page, "numerics-series-linear-output")
    with httpx.Client(base_url=memnum.url, timeout=30) as client:
        points = client.get(f"/series/{series}/points.json").json()
    assert points["tolerance"] == [[x, 0.1] for x in (0, 1, 2)]
    assert points["scale"] == "linear"
    assert not page.problems, page.problems


@pytest.mark.parametrize("width", [1280, 390])
def test_the_memory_views_fit_the_screen(memnum, browser, width):
    linear = case_id_of(memnum, "linear.LinearFwdBwd", recipe="fp8-current", mode="eager", rank=2)
    series = series_of(memnum, linear, "peak_allocated_bytes")
    context, page = page_at(browser, width)
    try:
        for path in ("/matrix?view=memory", f"/case/{linear}", f"/series/{series}"):
            open_ok(page, memnum.url + path)
            fits = page.evaluate(FITS)
            assert fits["page"] <= 0, (path, fits["page"])
            if width == 1280:
                assert not [t for t in fits["tables"] if t["overflow"] > 1], (path, fits["tables"])
            else:
                assert all(t["wrapRight"] <= width for t in fits["tables"]), (path, fits["tables"])
            boxes = page.eval_on_selector_all(
                "#numerics figure img", "imgs => imgs.map(i => i.getBoundingClientRect().right)"
            )
            assert all(right <= width for right in boxes), (path, boxes)
            name = path.strip("/").replace("/", "-").replace("?view=", "-")
            screenshot(page, f"width-{width}-{name}")
    finally:
        context.close()

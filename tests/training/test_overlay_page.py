"""The overlay of a training case's loss on its reference's, in Chromium against a real `tewatch serve`:
the case page shows the verdict and the SVG (head against base for a pull request's run, the recipe against
bf16 eager otherwise), the pull request's page links it and its headline counts the divergences.
Screenshots go to docs/screenshots/training/."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT, served_sqlite
from tests.training.conftest import PR_NUMBER, upload_history

SHOTS = REPO_ROOT / "docs" / "screenshots" / "training"


@pytest.fixture(scope="module")
def site(tmp_path_factory, trained):
    with served_sqlite(tmp_path_factory.mktemp("overlay")) as (server, _db_url):
        with server.client() as client:
            ids = upload_history(client, trained)
            cases = client.get("/api/v1/cases", params={"case": "training.TrainSteps"}).json()["items"]
        by_labels = {(c["labels"]["recipe"], c["labels"]["execution"]): c["id"] for c in cases}
        yield server, ids, by_labels


def _shot(page, name: str) -> Path:
    page.evaluate("window.scrollTo(0, 0)")
    SHOTS.mkdir(parents=True, exist_ok=True)
    path = SHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


def _image_drawn(page) -> bool:
    return page.eval_on_selector("#training img", "img => img.complete && img.naturalWidth > 0")


def test_a_pull_requests_case_page_overlays_head_on_base_and_names_the_step(site, page):
    server, ids, cases = site
    case_id = cases[("fp32", "eager")]
    page.goto(f"{server.url}/case/{case_id}?run={ids['head']}")
    verdict = page.text_content("[data-role=trajectory-verdict]")
    assert verdict.startswith("parts from the base at step 6 (")
    assert "against the base" in page.text_content("#training h2")
    page.wait_for_function("document.querySelector('#training img').complete")
    assert _image_drawn(page) and not page.problems
    _shot(page, "case-head-against-base")
    with server.client() as client:
        svg = client.get(f"/case/{case_id}/trajectory.svg", params={"run": ids["head"]})
    assert svg.status_code == 200 and svg.headers["content-type"].startswith("image/svg+xml")
    text = " ".join(t.text or "" for t in ET.fromstring(svg.text).iter("{http://www.w3.org/2000/svg}text"))
    assert "parts at step 6" in text and "the base" in text


def test_a_recipe_on_main_is_drawn_over_bf16_eager_with_its_band(site, page):
    server, ids, cases = site
    page.goto(f"{server.url}/case/{cases[('fp32', 'eager')]}?run={ids['aa']}")
    assert "against bf16 eager" in page.text_content("#training h2")
    assert page.text_content("[data-role=trajectory-verdict]").startswith("within the band of bf16 eager")
    page.wait_for_function("document.querySelector('#training img').complete")
    assert _image_drawn(page) and not page.problems
    _shot(page, "case-fp32-against-bf16")


def test_the_pull_requests_page_lists_the_training_cases_linking_their_overlay(site, page):
    server, ids, cases = site
    page.goto(f"{server.url}/pr/{PR_NUMBER}")
    section = page.locator("#pr-training")
    assert page.get_by_role("heading", name="Training").count() == 1
    link = section.locator(f"a[href='/case/{cases[('fp32', 'eager')]}?run={ids['head']}#training']")
    assert link.count() == 1
    assert re.search(r"parts from the base at step 6", section.text_content())
    # the headline says so: fp32 eager against the base, the head's compiled against its eager
    assert page.inner_text("#pr-divergences-count") == "2 training cases diverging"
    assert page.query_selector("[data-role=nothing-changed]") is None
    assert not page.problems
    _shot(page, "pr-training-section")
    link.click()
    page.wait_for_selector("#training img")
    assert page.url.endswith(f"?run={ids['head']}#training")


def test_a_case_without_a_trajectory_there_is_a_404_svg_and_a_page_without_the_section(site):
    server, _ids, cases = site
    with server.client() as client:
        missing = client.get(f"/case/{cases[('bf16', 'eager')]}/trajectory.svg", params={"run": 10_000})
        assert missing.status_code == 404
        without = client.get(f"/case/{cases[('bf16', 'eager')]}", params={"run": 10_000})
    assert without.status_code == 200 and 'id="training"' not in without.text


@pytest.mark.parametrize("value", ["2147483648", "-1", "0", "1e3", "x", "9" * 400, "%00"])
def test_hostile_run_and_case_numbers_are_answered_below_500(site, value):
    server, _ids, cases = site
    case_id = cases[("fp32", "eager")]
    with server.client() as client:
        for url in (
            f"/case/{case_id}?run={value}",
            f"/case/{case_id}/trajectory.svg?run={value}",
            f"/case/{value}/trajectory.svg",
            f"/api/v1/runs/{value}/trajectories/{case_id}",
            f"/api/v1/runs/1/trajectories/{value}",
        ):
            assert client.get(url).status_code < 500, url

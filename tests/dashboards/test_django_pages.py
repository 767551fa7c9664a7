"""The dashboard on a history that is not TE's: 300 real asv results of django/django-asv (python 3.12,
read at run time from ../shared/data) uploaded through `tewatch upload` into a real service, in Chromium."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from tests.conftest import LiveServer, served_sqlite, start_server, stop_server
from tests.dashboards.test_pages import open_page
from tests.history.django_data import django_results
from tests.uploads import cli_upload
from tewatch.store.engine.database import make_engine
from tewatch.store.schema.alert_models import Alert, Detection
from tewatch.store.schema.models import Commit, Run
from tewatch_dashboards.site import GENERAL_SUBJECT, read_facts

pytestmark = pytest.mark.long_setup


@pytest.fixture(scope="module")
def django_site(tmp_path_factory) -> Iterator[LiveServer]:
    folder = tmp_path_factory.mktemp("django-site")
    results = django_results(folder / "data", files=300, environments=("conda-py3.12",))
    with served_sqlite(folder) as (server, _):
        done = cli_upload(server, results, "--branch", "main")
        assert done.returncode == 0, done.stderr
        yield server


def detections(server: LiveServer) -> list[tuple[int, int, float, int]]:
    """(series id, run id, effect, commit place) of every active change point, in commit order."""
    engine = make_engine(server.db_url)
    with Session(engine) as session:
        found = session.execute(
            select(
                Detection.series_id,
                Detection.run_id,
                Detection.effect,
                func.coalesce(Commit.ordered_at, Commit.committed_at),
            )
            .join(Run, Run.id == Detection.run_id)
            .join(Commit, Commit.id == Run.commit_id)
            .where(Detection.active.is_(True))
            .order_by(func.coalesce(Commit.ordered_at, Commit.committed_at))
        ).all()
    engine.dispose()
    return [tuple(row) for row in found]


def test_the_header_names_what_the_store_tracks(django_site, page, tmp_path):
    open_page(page, django_site, "/")
    assert page.inner_text(".brand-sub") == GENERAL_SUBJECT
    engine = make_engine(django_site.db_url)
    with Session(engine) as session:
        facts = read_facts(session, "")
    engine.dispose()
    assert facts.subject == GENERAL_SUBJECT and not facts.has_grid
    named = start_server(django_site.db_url, tmp_path / "serve.log", env={"TEWATCH_PROJECT_NAME": "Django"})
    try:
        open_page(page, named, "/runs")
        assert page.inner_text(".brand-sub") == "Django"
    finally:
        stop_server(named)


def test_without_compile_cases_the_grid_is_off_the_menu_and_says_why(django_site, page):
    open_page(page, django_site, "/")
    assert "Compile vs eager" not in page.inner_text("nav.nav")
    open_page(page, django_site, "/matrix", "django-matrix")
    assert "no case in this store has a torch.compile mode" in page.inner_text("#no-grid")
    assert page.query_selector(".matrix-block") is None


def test_alerts_name_the_machine_where_the_gpu_is_unknown(django_site, page):
    engine = make_engine(django_site.db_url)
    with Session(engine) as session:
        titles = list(session.scalars(select(Alert.title)))
    engine.dispose()
    assert titles and all(" on ubuntu-latest: " in title for title in titles)
    open_page(page, django_site, "/alerts", "django-alerts")
    text = page.inner_text("#live-alerts")
    assert "on ubuntu-latest" in text and " on unknown" not in text


def test_change_points_are_listed_in_commit_order(django_site, page):
    by_series: dict[int, list[tuple[int, int]]] = {}
    for series_id, run_id, _, _ in detections(django_site):
        by_series.setdefault(series_id, []).append(run_id)
    # a series whose change points came from runs uploaded out of commit order (files go up by name)
    chosen = next((s for s, runs in by_series.items() if len(runs) >= 2 and runs != sorted(runs)), None)
    assert chosen is not None, "no series with change points uploaded out of commit order"
    open_page(page, django_site, f"/series/{chosen}?last=all")
    page.wait_for_selector("#chart[data-ready='1']")
    at = [
        int(cell.removeprefix("#"))
        for cell in page.eval_on_selector_all(
            "#change-points tbody tr td:first-child", "tds => tds.map(t => t.textContent)"
        )
    ]
    assert len(at) == len(by_series[chosen]) and at == sorted(at)
    runs = page.eval_on_selector_all(
        "#change-points tbody tr td:nth-child(2) a", "as => as.map(a => Number(a.href.split('/').pop()))"
    )
    assert runs == by_series[chosen]


def test_a_series_page_offers_a_log_scale_for_its_chart_and_its_svg(django_site, page):
    series_id, _, effect, _ = max(detections(django_site), key=lambda d: d[2])
    assert effect > 50  # a jump of more than 50 times flattens a linear axis
    open_page(page, django_site, f"/series/{series_id}?last=all")
    page.wait_for_selector("#chart[data-ready='1']")
    assert page.get_attribute("#chart", "data-y-distr") == "1"
    with page.expect_navigation():
        page.click("#scale-toggle")
    assert "scale=log" in page.url and "last=all" in page.url
    page.wait_for_selector("#chart[data-ready='1']")
    assert page.get_attribute("#chart", "data-y-distr") == "3"  # uPlot's logarithmic distribution
    assert page.inner_text("#scale-toggle") == "Linear scale"
    assert "scale=log" in page.get_attribute("a.btn[href*='plot.svg']", "href")
    page.select_option("select[name=last]", "300")
    page.wait_for_url("**scale=log**")
    assert page.problems == []
    with httpx.Client(base_url=django_site.url, timeout=60) as client:
        log_svg = client.get(f"/series/{series_id}/plot.svg", params={"scale": "log", "last": "all"})
        linear_svg = client.get(f"/series/{series_id}/plot.svg", params={"last": "all"})
        assert log_svg.status_code == linear_svg.status_code == 200
        assert "(log scale)" in log_svg.text and "(log scale)" not in linear_svg.text
        assert client.get(f"/series/{series_id}/plot.svg", params={"scale": "cubic"}).status_code == 400
        assert client.get(f"/series/{series_id}", params={"scale": "cubic"}).status_code == 400

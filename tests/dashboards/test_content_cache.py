"""The overview and matrix reuse their rendered content between uploads, and never show a stale one."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from tests.conftest import LiveServer, served_sqlite
from tests.dashboards.conftest import failing_variant
from tests.uploads import all_fixture_runs, parts_of, post_run

FRESH_EXCEPTION = "FreshUploadError"


def main_content(html: str) -> str:
    return re.search(r"<main[^>]*>(.*)</main>", html, re.S).group(1)


@pytest.fixture
def server(tmp_path) -> Iterator[LiveServer]:
    with served_sqlite(tmp_path) as (server, _):
        yield server


def test_an_upload_changes_the_overview_and_matrix_at_once(server):
    run = all_fixture_runs()[-1]
    with server.client() as client:
        assert post_run(client, parts_of(run), branch="main").status_code == 201
        before = {path: client.get(path).text for path in ("/", "/matrix")}
        for path, html in before.items():
            assert FRESH_EXCEPTION not in html
            assert main_content(client.get(path).text) == main_content(html), (
                f"{path} changed without an upload"
            )
        parts, _base = failing_variant(run, "cafe", FRESH_EXCEPTION)
        assert post_run(client, parts, branch="main").status_code == 201
        for path in ("/", "/matrix"):
            assert FRESH_EXCEPTION in client.get(path).text, f"{path} still shows the store before the upload"

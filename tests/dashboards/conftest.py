"""A real `tewatch serve` on a fresh SQLite database, loaded through the upload API with every real fixture
run in upload order (but the release history, whose order is its commits' dates: tests/campaign), an edited copy whose benchmark name and error message carry markup, and a pull-request run; and a
Chromium (Debian's) driven by Playwright. Screenshots go to test-output/screenshots/ (CI artifacts)."""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, REPO_ROOT, LiveServer, served_sqlite
from tests.uploads import all_fixture_runs, parts_of, post_run
from tewatch.ingest.discover import RunFiles
from tewatch_dashboards.views.matrix import matrix_column

CHROMIUM = Path(os.environ.get("TEWATCH_CHROMIUM", "/usr/bin/chromium"))
SCREENSHOTS = REPO_ROOT / "test-output" / "screenshots"
H200_FIXTURES = FIXTURES / "h200-full"
RELEASE_HISTORY = FIXTURES / "h200-releases"
MARKUP = '<script>window["tewatchPwned"]=1</script>'
PR_NUMBER = 4242
PR_ONLY_EXCEPTION = "PullRequestOnlyError"


@dataclass
class Site:
    server: LiveServer
    runs: list[RunFiles]
    answers: list[dict] = field(default_factory=list)
    markup_benchmark: str = ""
    markup_message: str = ""
    pr_run_id: int = 0

    @property
    def url(self) -> str:
        return self.server.url


def _case_records(parts: dict[str, list[tuple[str, bytes]]]) -> list[tuple[int, dict]]:
    return [(i, json.loads(content)) for i, (_name, content) in enumerate(parts.get("cases", []))]


def markup_variant(run: RunFiles) -> tuple[dict[str, list[tuple[str, bytes]]], str, str]:
    """A copy of a real run whose first class-based benchmark is renamed to carry a <script> element, and
    whose first failing case record's message carries one too; as a new commit, the newest of all (dated a
    minute before now: every fixture is older, and a date past the service's clock is refused), so it is a
    new run and the latest."""
    parts = parts_of(run)
    results = json.loads(parts["result"][0][1])
    benchmarks = json.loads(parts["benchmarks"][0][1])
    original = next(name for name in results["results"] if re.fullmatch(r"\w+\.[A-Z]\w*\.\w+", name))
    module, cls, method = original.split(".")
    renamed = f"{module}.{cls}{MARKUP}.{method}"
    results["results"][renamed] = results["results"].pop(original)
    results["commit_hash"] = "c0ffee" + results["commit_hash"][6:]
    results["date"] = int(time.time() * 1000) - 60_000
    entry = dict(benchmarks[original], name=renamed)
    benchmarks[renamed] = entry
    parts["result"] = [(parts["result"][0][0], json.dumps(results).encode())]
    parts["benchmarks"] = [(parts["benchmarks"][0][0], json.dumps(benchmarks).encode())]
    message = ""
    for i, record in _case_records(parts):
        if record["verdict"].get("status") in ("error", "fail_accuracy"):
            message = f"{record['verdict'].get('message') or 'failed'} {MARKUP}"
            record["verdict"]["message"] = message
            name = parts["cases"][i][0]
            parts["cases"][i] = (name, json.dumps(record).encode())
            break
    return parts, renamed, message


def failing_variant(
    run: RunFiles, commit_prefix: str, exception_class: str
) -> tuple[dict[str, list[tuple[str, bytes]]], str]:
    """A copy of a real run at a new commit (its hash starting with `commit_prefix`) whose first passing case
    of the compile-vs-eager grid fails with `exception_class`; and the run's own commit hash."""
    parts = parts_of(run)
    results = json.loads(parts["result"][0][1])
    base = results["commit_hash"]
    results["commit_hash"] = commit_prefix + base[len(commit_prefix) :]
    parts["result"] = [(parts["result"][0][0], json.dumps(results).encode())]
    for i, record in _case_records(parts):
        labels, params = record.get("labels", {}), record.get("params", {})
        in_grid = (
            matrix_column(
                labels.get("mode", params.get("mode")), labels.get("rank", params.get("rank")), labels
            )
            is not None
        )
        if record["verdict"].get("status") == "pass" and in_grid:
            record["verdict"] = {
                "status": "error",
                "check": record["verdict"].get("check", ""),
                "exception_class": exception_class,
                "message": f"{exception_class} in {commit_prefix}",
            }
            parts["cases"][i] = (parts["cases"][i][0], json.dumps(record).encode())
            return parts, base
    raise AssertionError(f"{run.result} holds no passing case of the compile-vs-eager grid")


def pull_request_variant(run: RunFiles) -> tuple[dict[str, list[tuple[str, bytes]]], str]:
    """A copy of a real run as the head of a pull request, whose merge base is the run's own commit, where
    one grid case fails with PR_ONLY_EXCEPTION (default-branch pages must not show it)."""
    return failing_variant(run, "feed", PR_ONLY_EXCEPTION)


TINY_REPO = "example/asv-tiny"


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Iterator[Site]:
    runs = [run for run in all_fixture_runs() if RELEASE_HISTORY not in run.result.parents]
    assert runs, "no asv results under tests/fixtures"
    with served_sqlite(tmp_path_factory.mktemp("dashboard")) as (server, _):
        site = Site(server, runs)
        with server.client() as client:
            for run in runs:
                # the tiny asv project's runs under a repository of their own, TE's under none named
                repo = {"repo": TINY_REPO} if "asv-tiny" in run.result.parts else {}
                answer = post_run(client, parts_of(run), branch="main", **repo)
                assert answer.status_code == 201, answer.text
                site.answers.append(answer.json())
            parts, site.markup_benchmark, site.markup_message = markup_variant(runs[0])
            answer = post_run(client, parts, branch="main")
            assert answer.status_code == 201, answer.text
            parts, base = pull_request_variant(runs[-1])
            answer = post_run(client, parts, pr_number=str(PR_NUMBER), merge_base_sha=base, branch="feature")
            assert answer.status_code == 201, answer.text
            site.pr_run_id = answer.json()["run_id"]
        yield site


@pytest.fixture(scope="module")
def browser() -> Iterator:
    from playwright.sync_api import sync_playwright

    if not CHROMIUM.exists():
        pytest.fail(f"no Chromium at {CHROMIUM}: apt-get install -y chromium (or set TEWATCH_CHROMIUM)")
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM))
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser):
    """A fresh page that records console errors and failed requests (a CSP violation shows as both)."""
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    page = context.new_page()
    page.problems = []
    page.on("console", lambda m: page.problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: page.problems.append(str(e)))
    yield page
    context.close()


def screenshot(page, name: str) -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path

"""`tewatch bisect` end to end on CPU: a package with 17 commits of its own, real asv runs of a suite that
measures it with tewatch's harness, real environments per commit, a real `tewatch serve`, Chromium."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import httpx
import pytest

from tests.bisection.tinyrepo import Change, make_base, make_project, make_repo
from tests.conftest import served_sqlite

pytestmark = pytest.mark.long_setup

FLIP, SLOWER, BROKEN = 10, 5, 12  # the commit whose answer is wrong, whose call is slower, that cannot import
CHANGES = [
    Change(answer=41 if i >= FLIP else 42, sleep_s=0.012 if i >= SLOWER else 0.002, broken=i == BROKEN)
    for i in range(17)
]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("bisect")
    shas = make_repo(root / "repo", CHANGES)
    base = make_base(root / "base", root / "repo", shas[0])
    project = make_project(root / "project")
    with served_sqlite(root) as (server, _):
        yield root, shas, base, project, server


def bisect(world, *args: str, work: str = "work") -> subprocess.CompletedProcess[str]:
    root, _, base, project, server = world
    command = [
        sys.executable, "-c", "from tewatch.cli import main; main()", "bisect",
        "--repo", str(root / "repo"), "--project", str(project), "--profile", "ci", "--machine", "tiny",
        "--base-python", base, "--package", "tinypkg", "--binaries", "*.bin", "--smoke", "import tinypkg",
        "--work", str(root / work), "--url", server.url, "--token", server.token, "--github", "example/tinypkg",
        *args,
    ]  # fmt: skip
    return subprocess.run(command, capture_output=True, text=True, timeout=1800)


def measured(log: str) -> list[str]:
    return [line.split()[-1] for line in log.splitlines() if line.startswith("bisect: measuring")]


def test_questions_that_cannot_be_answered_end_before_any_build(world) -> None:
    root, shas, *_ = world
    cases = [
        (["--good", "no-such-commit", "--bad", shas[16], "--bench", "tiny.Answer"], "unknown commit 'no-such-commit'"),
        (["--good", shas[16], "--bad", shas[0], "--bench", "tiny.Answer"], "is not an ancestor of the bad commit"),
        (["--good", shas[0], "--bad", shas[16], "--bench", "tiny.Nothing"], "matches none of the 2 benchmarks"),
        (["--good", shas[0], "--bad", shas[16], "--bench", "tiny.Answer", "--judge", "value"], "needs --value"),
    ]  # fmt: skip
    for args, message in cases:
        done = bisect(world, *args, work="refused")
        assert done.returncode == 1, done.stderr
        assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert not (root / "refused" / "envs").exists()


def test_endpoints_that_do_not_differ_end_after_measuring_them_alone(world) -> None:
    root, shas, *_ = world
    done = bisect(world, "--good", shas[0], "--bad", shas[16], "--bench", "tiny.Other", work="same")
    assert done.returncode == 2, done.stderr
    assert "no selected case's verdict differs between the endpoints" in done.stderr
    assert sorted(measured(done.stderr)) == sorted([shas[0][:12], shas[16][:12]])
    assert len(list((root / "same" / "envs").iterdir())) == 2


def test_a_correctness_flip_is_found_exactly_past_a_skip_and_resumes_without_measuring_twice(
    world, page
) -> None:
    root, shas, _, _, server = world
    args = ["--good", shas[0], "--bad", shas[16], "--bench", "tiny.Answer"]
    stopped = bisect(world, *args, "--max-minutes", "0.01")  # the endpoints, then out of time
    assert stopped.returncode == 3, stopped.stderr
    assert "run again with more time to resume" in stopped.stderr
    first = measured(stopped.stderr)
    assert sorted(first) == sorted([shas[0][:12], shas[16][:12]])

    resumed = bisect(world, *args)
    assert resumed.returncode == 0, resumed.stderr
    second = measured(resumed.stderr)
    assert not set(first) & set(second)
    assert len(second) == len(set(second)) <= math.ceil(math.log2(15)) + 1
    assert f"first bad commit: {shas[FLIP]} change {FLIP}" in resumed.stdout
    assert f"https://github.com/example/tinypkg/commit/{shas[FLIP]}" in resumed.stdout

    again = bisect(world, *args)
    assert again.returncode == 0 and measured(again.stderr) == [], again.stderr

    state = json.loads(next((root / "work").glob("*.json")).read_text())
    verdicts = {step["commit"]: step["verdict"] for step in state["steps"]}
    assert verdicts[shas[BROKEN]] == "skip" and verdicts[shas[FLIP]] == "bad"
    assert len(state["steps"]) == len(verdicts)

    with httpx.Client(base_url=server.url) as client:
        stored = client.get(f"/api/v1/bisections/{state['bisection_id']}").json()
        assert stored["status"] == "finished" and stored["culprit_sha"] == shas[FLIP]
        assert stored["culprit_url"] == f"https://github.com/example/tinypkg/commit/{shas[FLIP]}"
        steps = {s["sha"]: s for s in stored["steps"]}
        assert steps.keys() == verdicts.keys()
        assert "ImportError: broken" in steps[shas[BROKEN]]["skip_reason"]
        for step in stored["steps"]:
            if step["verdict"] != "skip":
                run = client.get(f"/api/v1/runs/{step['run_id']}").json()
                assert run["branch"] == f"bisect-{shas[0][:8]}-{shas[16][:8]}"

    page.goto(f"{server.url}/bisections/{state['bisection_id']}")
    assert page.locator("#culprit").inner_text().startswith("First bad commit")
    assert f"change {FLIP}: answer 41" in page.locator("#culprit").inner_text()
    rows = page.locator("#bisection-steps tbody tr")
    assert rows.count() == len(verdicts)
    broken = page.locator(f'#bisection-steps tr[data-sha="{shas[BROKEN]}"]').inner_text()
    assert "skip" in broken and "ImportError: broken" in broken
    assert page.locator(f'a[href="https://github.com/example/tinypkg/commit/{shas[FLIP]}"]').count() >= 1
    assert page.problems == []


def test_a_performance_step_is_found_in_log2_measured_commits(world) -> None:
    _, shas, *_ = world
    done = bisect(
        world, "--good", shas[0], "--bad", shas[16], "--bench", "tiny.Answer", "--judge", "performance",
        "--rounds", "1", work="perf",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert f"first bad commit: {shas[SLOWER]} change {SLOWER}" in done.stdout
    # the bad endpoint (A/B against the good one) and the steps; the good endpoint is every step's base
    commits = {line.split()[-1] for line in done.stderr.splitlines() if line.startswith("bisect: measuring")}
    assert len(commits - {shas[0][:12]}) <= math.ceil(math.log2(15)) + 1


def test_a_backfill_uploads_every_strided_commit_oldest_first_and_skips_what_cannot_import(world) -> None:
    root, shas, base, project, server = world
    command = [
        sys.executable, "-c", "from tewatch.cli import main; main()", "backfill",
        "--from", shas[0], "--to", shas[16], "--stride", "6", "--branch", "history",
        "--repo", str(root / "repo"), "--project", str(project), "--profile", "ci", "--machine", "tiny",
        "--base-python", base, "--package", "tinypkg", "--binaries", "*.bin", "--smoke", "import tinypkg",
        "--work", str(root / "backfill"), "--url", server.url, "--token", server.token, "--bench", "tiny.Answer",
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stderr
    assert f"{shas[BROKEN][:12]} skipped: import tinypkg failed: ImportError: broken" in done.stderr
    with httpx.Client(base_url=server.url) as client:
        runs = sorted(
            client.get("/api/v1/runs", params={"branch": "history"}).json()["items"], key=lambda r: r["id"]
        )
    assert [run["commit_sha"] for run in runs] == [shas[0], shas[6], shas[16]]

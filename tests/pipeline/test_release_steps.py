"""Each TE release judged against the one before on the same branch and machine, stored by the detection an
upload gets (tewatch.pipeline.release_steps), on SQLite and PostgreSQL: the kept H200 releases
(tests/fixtures/h200-releases), a copy of 2.19.0's run with slower GEMMs filed as 2.19.1, releases arriving
out of commit order, and runs that are no release step (a pull request, a development build)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import delete, func, select

from tests.conftest import REPO_ROOT
from tewatch.campaign.demo import RELEASE_HISTORY, load_runs
from tewatch.campaign.release_history import release_runs
from tewatch.campaign.release_steps import release_summaries
from tewatch.core.te_releases import is_release
from tewatch.ingest.discover import find_runs
from tewatch.store.engine.database import make_engine
from tewatch.store.reads.release_reads import failing_since, release_signals, release_steps, series_steps
from tewatch.store.reads.store_state import store_state
from tewatch.store.schema.alert_models import ReleaseComparison

RELEASES = {r.version: r for r in release_runs(REPO_ROOT / RELEASE_HISTORY)[:2]}  # 2.18.0, 2.19.0


def load(db_url: str, version: str, branch: str = "main", **fields) -> int:
    release = RELEASES[version]
    [(run_id, _)] = load_runs(db_url, release.runs(), branch, commit_date=release.commit_date, **fields)
    return run_id


def later_release(tmp: Path, version: str, commit: str, gemm_factor: float = 1.0) -> Path:
    """A copy of 2.19.0's run filed as another TE version under another commit, its GEMM timings
    `gemm_factor` times 2.19.0's."""
    into = tmp / version
    shutil.copytree(REPO_ROOT / RELEASE_HISTORY / "2.19.0", into)
    [run] = find_runs(into)
    results = json.loads(run.result.read_text())
    result, samples = results["result_columns"].index("result"), results["result_columns"].index("samples")
    for name, row in results["results"].items():
        if name.startswith("gemm.Gemm."):
            row[result] = [v * gemm_factor if v is not None else None for v in row[result]]
            row[samples] = [[s * gemm_factor for s in one] if one else one for one in row[samples]]
    results["commit_hash"] = commit
    run.result.write_text(json.dumps(results))
    assert run.run is not None
    record = json.loads(run.run.read_text())
    record["versions"]["te"], record["commit"] = version, commit
    run.run.write_text(json.dumps(record))
    return into


def load_later(db_url: str, folder: Path, days: int = 30) -> int:
    [(run_id, _)] = load_runs(
        db_url, find_runs(folder), "main", commit_date=RELEASES["2.19.0"].commit_date + timedelta(days=days)
    )
    return run_id


@pytest.fixture
def conn(db_url):
    engine = make_engine(db_url)
    with engine.connect() as connection:
        yield connection
    engine.dispose()


def test_a_release_is_judged_against_the_one_before_as_its_readme_says(db_url, conn):
    first, second = load(db_url, "2.18.0"), load(db_url, "2.19.0")
    [step] = release_steps(conn)
    assert (step.base_version, step.head_version, step.machine) == ("2.18.0", "2.19.0", "vm-h200")
    assert (step.base_run_ids, step.head_run_ids) == ([first], [second])
    # tests/fixtures/h200-releases/README.md: 4 regressions and 1 improvement, CpuOps FP8 the largest
    regressions = step.changed("regression")
    assert len(regressions) == 4 and len(step.changed("improvement")) == 1
    largest = regressions[0]
    assert (largest.benchmark, largest.params) == (
        "checks.CpuOps.track_seconds",
        {"quantizer": "fp8-delayed"},
    )
    assert largest.effect == pytest.approx(9.51, abs=0.05)
    assert largest.ci_low < largest.effect < largest.ci_high
    # a series 2.18.0 did not measure (te.Linear) has no step
    assert not any(c.benchmark.startswith("linear.") for c in step.comparisons)
    assert {(c.case_name, c.params["quantizer"]) for c in step.new_failures} == {
        ("contracts.CheckpointParity", "fp8-current"),
        ("contracts.CheckpointParity", "fp8-delayed"),
    }
    assert all(c.before == "pass" and c.after == "fail_accuracy" for c in step.new_failures)
    assert len(step.fixes) == 12 and {c.case_name for c in step.fixes} == {"contracts.ShapeContract"}
    assert all("inner_tensor_specs" in c.detail for c in step.fixes)


def test_slower_gemms_in_a_later_release_are_its_regressions_and_nothing_else_is(db_url, conn, tmp_path):
    load(db_url, "2.18.0")
    load(db_url, "2.19.0")
    slower = load_later(db_url, later_release(tmp_path, "2.19.1", "c0ffee" + "0" * 34, gemm_factor=1.25))
    [newest, _] = release_steps(conn)
    assert (newest.base_version, newest.head_version, newest.head_run_ids) == ("2.19.0", "2.19.1", [slower])
    regressions = newest.changed("regression")
    assert regressions and {c.benchmark for c in regressions} <= {
        "gemm.Gemm.track_seconds",
        "gemm.Gemm.kernel_seconds",
    }
    assert "gemm.Gemm.track_seconds" in {c.benchmark for c in regressions}
    assert all(c.effect == pytest.approx(0.25, abs=0.03) for c in regressions)
    assert not newest.changed("improvement") and not newest.new_failures and not newest.fixes
    # the overview's Perf column: each GEMM case's newest step
    signals = release_signals(conn, [c.case_id for c in regressions])
    assert {s.kind for s in signals.values()} == {"regression"}
    assert {(s.base_version, s.head_version) for s in signals.values()} == {("2.19.0", "2.19.1")}
    # a series page lists its steps newest first
    steps = series_steps(conn, [regressions[0].series_id])
    assert [(s.base_version, s.head_version) for s in steps] == [("2.19.0", "2.19.1"), ("2.18.0", "2.19.0")]
    assert steps[0].comparison.verdict == "regression"


def test_a_release_that_arrives_after_the_next_one_is_stepped_all_the_same(db_url, conn):
    second = load(db_url, "2.19.0")
    assert release_steps(conn) == []
    conn.rollback()  # end the read's transaction: SQLite's would keep showing the store as it was
    first = load(db_url, "2.18.0")
    [step] = release_steps(conn)
    assert (step.base_run_ids, step.head_run_ids) == ([first], [second])
    assert len(step.changed("regression")) == 4


def test_pull_requests_and_development_builds_take_no_release_step(db_url, conn, tmp_path):
    load(db_url, "2.18.0")
    load(db_url, "2.19.0", branch="pr-7", pr_number=7, merge_base=RELEASES["2.18.0"].commit)
    load_later(db_url, later_release(tmp_path, "2.21.0.dev0+g1234abc", "d0d0" + "0" * 36))
    assert release_steps(conn) == []
    assert conn.execute(select(func.count()).select_from(ReleaseComparison)).scalar_one() == 0


def test_a_failure_is_named_by_the_release_it_began_in(db_url, conn):
    first, second = load(db_url, "2.18.0"), load(db_url, "2.19.0")
    [step] = release_steps(conn)
    parity = step.new_failures[0].case_id
    fixed = step.fixes[0].case_id
    since = failing_since(conn, [parity, fixed])
    assert since[parity].run_id == second and since[parity].te_version == "2.19.0"
    assert not since[parity].stand_in and fixed not in since
    # the fixed case failed at 2.18.0's own run, from that run on
    assert failing_since(conn, [fixed], "main", at_run=first)[fixed].te_version == "2.18.0"
    # at 2.18.0's own run the parity check passed: no failure began there
    assert parity not in failing_since(conn, [parity], "main", at_run=first)


def test_the_demo_prints_each_stored_step_with_its_largest_change(db_url):
    load(db_url, "2.18.0")
    load(db_url, "2.19.0")
    engine = make_engine(db_url)
    try:
        [line] = release_summaries(engine, "http://tewatch")
    finally:
        engine.dispose()
    assert line.startswith("TE 2.18.0 -> 2.19.0 on vm-h200: 1 improvement, ")
    assert "4 regression" in line and "2 cases began failing, 12 pass again" in line
    assert "largest +951%: checks.CpuOps.track_seconds, http://tewatch/series/" in line
    assert line.endswith("every step: http://tewatch/releases")


def test_tewatch_detect_compares_the_releases_of_a_store_filled_before_release_steps_were_stored(
    db_url, conn
):
    load(db_url, "2.18.0")
    load(db_url, "2.19.0")
    before = {(c.series_id, c.verdict, c.effect) for c in release_steps(conn)[0].comparisons}
    state = store_state(conn)
    conn.rollback()
    engine = make_engine(db_url)
    try:
        with engine.begin() as writer:
            writer.execute(delete(ReleaseComparison))
    finally:
        engine.dispose()
    done = subprocess.run(
        [sys.executable, "-m", "tewatch", "detect", "--branch", "main", "--db", db_url],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert re.search(rf"series compared between TE releases\s+│\s+{len(before)}\b", done.stdout), done.stdout
    after = {(c.series_id, c.verdict, c.effect) for c in release_steps(conn)[0].comparisons}
    assert after == before
    assert store_state(conn) != state  # the overview's cached contents are rendered again


@pytest.mark.parametrize(
    ("version", "release"),
    [
        ("2.20.2", True),
        ("2.21.0rc1", True),
        ("2.19.post1", True),
        ("2.21.0.dev0+g1234abc", False),
        ("", False),
    ],
)
def test_only_published_versions_are_releases(version, release):
    assert is_release(version) is release

"""The kept three-arm H200 campaign (tests/fixtures/h200-ab-quick) compared again through a real service:
the sized slowdowns against the base, and the A/A arm against the base, one process per case and side."""

import glob
import json
import sqlite3
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
KEPT = ROOT / "tests" / "fixtures" / "h200-ab-quick"


def _case_key(case: str, params: dict) -> tuple[str, str]:
    return case, json.dumps(params, sort_keys=True)


def _compare(arm: str, out: Path) -> dict[tuple[str, str], dict[str, str]]:
    """(case, params) -> {timing: verdict} of the arm compared as pull request 1 against the base."""
    done = subprocess.run(
        [sys.executable, "-m", "tewatch", "campaign", "--base-results", str(KEPT / "base-results"),
         "--head-results", str(KEPT / f"{arm}-results"), "--pr", "1", "--out", str(out), "--project", str(ROOT)],
        capture_output=True, text=True, timeout=300, check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    with sqlite3.connect(out / "campaign.sqlite3") as db:
        rows = db.execute(
            "SELECT c.case_name, c.params, b.name, p.verdict FROM pr_comparisons p"
            " JOIN series s ON s.id = p.series_id JOIN benchmarks b ON b.id = s.benchmark_id"
            " JOIN cases c ON c.id = s.case_id WHERE p.pr_number = 1").fetchall()
    verdicts: dict[tuple[str, str], dict[str, str]] = defaultdict(dict)
    for case, params, benchmark, verdict in rows:
        verdicts[_case_key(case, json.loads(params))][benchmark.rpartition(".")[2]] = verdict
    return verdicts


def _flagged(verdicts: dict) -> set:
    return {key for key, timings in verdicts.items() if {"regression", "improvement"} & set(timings.values())}


@pytest.fixture(scope="module")
def touched() -> dict[tuple[str, str], list[str]]:
    """The head's cases whose timed calls ran a perturbation, from their records."""
    found = {}
    for path in glob.glob(str(KEPT / "head-results" / "*" / "*.tewatch" / "cases" / "*.json")):
        record = json.loads(Path(path).read_text())
        if record.get("perturbations"):
            found[_case_key(record["case"], record["params"])] = sorted(record["perturbations"])
    return found


def test_the_extra_fp8_pass_is_found_in_kernel_time_where_event_time_cannot_see_it(tmp_path, touched) -> None:
    verdicts = _compare("head", tmp_path)
    extra_pass = {k for k, names in touched.items() if "fp8-current-extra-pass" in names}
    linear = {k for k in extra_pass if k[0] == "linear.LinearFwdBwd"}
    assert len(linear) == 6 and all(verdicts[k]["kernel_seconds"] == "regression" for k in linear)
    assert all("regression" in verdicts[k].values() for k in extra_pass)
    rht = _case_key("rht.Rht", {"backend": "te-ref", "shape": "8192x5120"})
    assert verdicts[rht]["kernel_seconds"] == "regression"
    # single runs: what is flagged and untouched is the bf16 te.Linear kernel time, whose level moved by
    # 12-14 % between processes (the fixture's README)
    untouched = _flagged(verdicts) - set(touched)
    assert all(k[0] == "linear.LinearFwdBwd" and '"recipe": "bf16"' in k[1] for k in untouched)
    assert len(untouched) <= 2


def test_the_a_a_arm_is_told_apart_from_the_base_in_at_most_two_cases(tmp_path) -> None:
    verdicts = _compare("aa", tmp_path)
    assert len(verdicts) == 86
    assert len(_flagged(verdicts)) <= 2

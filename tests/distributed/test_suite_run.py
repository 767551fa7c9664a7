"""The real thing on CPU: `tewatch run --profile ci --backends torch-ref` runs the world-size-2 torch-ref
case through asv, and its results upload through a real `tewatch serve` into SQLite and PostgreSQL,
where the case carries its world size and interconnect and the matrix filters on the world size."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT

pytestmark = pytest.mark.long_setup

CLI = [sys.executable, "-c", "from tewatch.cli import main; main()"]
CASE = "distributed.LinearTensorParallel"
COMMIT = "0123456789abcdef0123456789abcdef01234567"


@pytest.fixture(scope="module")
def ci_run(tmp_path_factory) -> Path:
    results = tmp_path_factory.mktemp("distributed-ci") / "results"
    done = subprocess.run(
        [
            *CLI,
            "run",
            "--profile",
            "ci",
            "--backends",
            "torch-ref",
            "--bench",
            r"^distributed\.",
            "--results-dir",
            str(results),
            "--machine",
            "ci-cpu",
            "--commit",
            COMMIT,
        ],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return results


def _records(results: Path, case: str = CASE) -> list[dict]:
    found = [json.loads(p.read_text()) for p in results.glob("ci-cpu/*.tewatch/cases/*.json")]
    return [r for r in found if r["case"] == case]


def test_the_ci_profile_runs_the_world_size_2_torch_ref_case(ci_run):
    (record,) = _records(ci_run)
    assert record["case"] == CASE
    assert record["params"] == {
        "recipe": "torch-ref",
        "world_size": 2,
        "parallel": "column",
        "sequence_parallel": True,
        "mode": "eager",
    }
    assert record["verdict"]["status"] == "pass", record["verdict"]
    assert {c["check"] for c in [record["verdict"], *record["extra_checks"]]} == {
        "output_vs_single_gpu",
        "dgrad_vs_single_gpu",
        "wgrad_vs_single_gpu",
        "columnwise_gather_bitwise",
    }
    assert record["labels"]["world_size"] == 2 and record["labels"]["interconnect"] == "loopback"
    (result_file,) = [p for p in ci_run.glob("ci-cpu/*.json") if p.name != "machine.json"]
    row = json.loads(result_file.read_text())["results"][f"{CASE}.track_seconds"]
    assert all(isinstance(v, float) and v > 0 for v in row[0])


def test_its_results_upload_and_the_matrix_filters_by_world_size(ci_run, live_server):
    done = subprocess.run(
        [
            *CLI,
            "upload",
            str(ci_run),
            "--url",
            live_server.url,
            "--token",
            live_server.token,
            "--branch",
            "main",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    with live_server.client() as client:
        cases = client.get("/api/v1/cases", params={"case": CASE}).json()["items"]
        (case,) = cases
        assert case["world_size"] == 2 and case["rank"] == 3 and case["backend"] == "torch-ref"
        assert case["labels"]["interconnect"] == "loopback" and case["labels"]["parallel_mode"] == "column"
        two = client.get("/matrix", params={"world_size": "2"})
        one = client.get("/matrix", params={"world_size": "1"})
    assert two.status_code == 200 and "world size 2" in two.text and "sequence_parallel=True" in two.text
    assert "FSDP2 DCP" in two.text  # distributed.FsdpCheckpoint, in its recipe's row
    assert one.status_code == 200 and "sequence_parallel=True" not in one.text

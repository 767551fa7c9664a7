"""The real thing on CPU: `tewatch run --profile ci --backends te,torch-ref` runs the world-size-2 cases
through asv: the torch-ref te.Linear under tensor parallelism and the FSDP2 checkpoint round trip over gloo
pass, TE's recipes are `unsupported` (no CUDA) with the reason; the results upload through a real
`tewatch serve` into SQLite and PostgreSQL, where the case carries its world size and interconnect and
the matrix filters on the world size. One run serves every test here (tests/distributed/
test_fsdp_checkpoint.py tests the FSDP case's ranks directly)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.harness.dcp_round_trip import RECIPES
from tests.conftest import REPO_ROOT

pytestmark = pytest.mark.long_setup

CLI = [sys.executable, "-c", "from tewatch.cli import main; main()"]
CASE = "distributed.LinearTensorParallel"
FSDP_CASE = "distributed.FsdpCheckpoint"
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
            "te,torch-ref",
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
    records = _records(ci_run)
    assert {r["params"]["recipe"] for r in records} == {
        "bf16",
        "fp8-current",
        "fp8-block",
        "nvfp4",
        "torch-ref",
    }
    for te_record in [r for r in records if r["params"]["recipe"] != "torch-ref"]:
        assert te_record["verdict"]["status"] == "unsupported", te_record["verdict"]
    (record,) = [r for r in records if r["params"]["recipe"] == "torch-ref"]
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
    # TE's recipes are skips (NaN), the torch-ref case (last) a timing
    assert isinstance(row[0][-1], float) and row[0][-1] > 0
    assert all(math.isnan(v) for v in row[0][:-1])


@pytest.fixture(scope="module")
def fsdp_verdicts(ci_run) -> dict[str, dict]:
    return {r["params"]["recipe"]: r for r in _records(ci_run, FSDP_CASE)}


def test_te_recipes_of_the_fsdp_checkpoint_are_unsupported_on_cpu_with_the_reason(fsdp_verdicts):
    assert set(fsdp_verdicts) == {*RECIPES, "torch-ref"}
    for recipe in RECIPES:
        verdict = fsdp_verdicts[recipe]["verdict"]
        assert (verdict["check"], verdict["status"]) == ("capability", "unsupported"), verdict
        assert verdict["reason"] == "CUDA device required"
        assert fsdp_verdicts[recipe]["params"]["world_size"] == 2


def test_the_torch_ref_round_trip_under_fsdp2_passes_every_check(fsdp_verdicts):
    record = fsdp_verdicts["torch-ref"]
    checks = {c["check"]: c for c in [record["verdict"], *record["extra_checks"]]}
    assert set(checks) == {"dcp_buffers", "dcp_forward"}
    assert {c["status"] for c in checks.values()} == {"pass"}
    assert checks["dcp_forward"]["value"] == 0.0 and "rank 1 pass" in checks["dcp_forward"]["message"]
    assert record["one_shot"] and record["labels"]["interconnect"] == "loopback"


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
        (case,) = [c for c in cases if c["backend"] == "torch-ref"]
        assert case["world_size"] == 2 and case["rank"] == 3 and case["backend"] == "torch-ref"
        assert case["labels"]["interconnect"] == "loopback" and case["labels"]["parallel_mode"] == "column"
        two = client.get("/matrix", params={"world_size": "2"})
        one = client.get("/matrix", params={"world_size": "1"})
    assert two.status_code == 200 and "world size 2" in two.text and "sequence_parallel=True" in two.text
    assert "FSDP2 DCP" in two.text  # distributed.FsdpCheckpoint, in its recipe's row
    assert one.status_code == 200 and "sequence_parallel=True" not in one.text

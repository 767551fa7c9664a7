"""The FSDP2 checkpoint case for real on CPU: a `tewatch run` of the ci profile with both backends records
TE's recipes `unsupported` (no CUDA) and the torch-ref round trip at world size 2 over gloo passing; a
perturbation that loses the load fails both checks; on a GPU machine with fewer GPUs than ranks the case
is `unsupported` before any rank starts."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from benchmarks.harness import gates, records
from benchmarks.harness.dcp_round_trip import RECIPES
from benchmarks.harness.distributed import fsdp_checkpoint
from benchmarks.harness.distributed.launcher import launch
from benchmarks.harness.profiles import get_profile
from tests.conftest import REPO_ROOT

CLI = [sys.executable, "-c", "from tewatch.cli import main; main()"]
CASE = "distributed.FsdpCheckpoint"
JOB = fsdp_checkpoint.FsdpJob(
    backend="torch-ref",
    recipe="torch-ref",
    device="cpu",
    world_size=2,
    in_features=128,
    out_features=128,
    tokens=32,
)


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory) -> dict[str, dict]:
    results = tmp_path_factory.mktemp("fsdp-ci") / "results"
    done = subprocess.run(
        [
            *CLI,
            "run",
            "--profile",
            "ci",
            "--backends",
            "te,torch-ref",
            "--bench",
            r"^distributed\.FsdpCheckpoint",
            "--results-dir",
            str(results),
            "--machine",
            "ci-cpu",
            "--commit",
            "f" * 40,
        ],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    found = [json.loads(p.read_text()) for p in results.glob("ci-cpu/*.tewatch/cases/*.json")]
    return {r["params"]["recipe"]: r for r in found if r["case"] == CASE}


def test_te_recipes_are_unsupported_on_cpu_with_the_reason(verdicts):
    assert set(verdicts) == {*RECIPES, "torch-ref"}
    for recipe in RECIPES:
        verdict = verdicts[recipe]["verdict"]
        assert (verdict["check"], verdict["status"]) == ("capability", "unsupported"), verdict
        assert verdict["reason"] == "CUDA device required"
        assert verdicts[recipe]["params"]["world_size"] == 2


def test_the_torch_ref_round_trip_under_fsdp2_passes_every_check(verdicts):
    record = verdicts["torch-ref"]
    checks = {c["check"]: c for c in [record["verdict"], *record["extra_checks"]]}
    assert set(checks) == {"dcp_buffers", "dcp_forward"}
    assert {c["status"] for c in checks.values()} == {"pass"}
    assert checks["dcp_forward"]["value"] == 0.0 and "rank 1 pass" in checks["dcp_forward"]["message"]
    assert record["one_shot"] and record["labels"]["interconnect"] == "loopback"


def test_a_load_that_leaves_the_sharded_weights_fails_both_checks(monkeypatch):
    monkeypatch.setenv("TEWATCH_PERTURB", "torchref-fsdp-stale-load")  # the spawned ranks apply it
    outcome = launch(fsdp_checkpoint.run_fsdp_checkpoint, JOB, 2, "cpu", deadline_s=120)
    assert outcome.status == "ok", outcome.message
    checks = {c.check: c for c in fsdp_checkpoint.case_checks(outcome.reports)}
    assert checks["dcp_buffers"].status == "fail_accuracy"
    assert checks["dcp_buffers"].details == {"differing": ["weight"]}
    assert checks["dcp_forward"].status == "fail_accuracy" and checks["dcp_forward"].value > 0


def test_the_worst_rank_decides_each_check_and_is_named():
    ok = records.Check(check="dcp_buffers", status="pass").to_json()
    bad = records.Check(check="dcp_buffers", status="fail_accuracy", message="weight differs").to_json()
    (check,) = fsdp_checkpoint.case_checks([{"rank": 1, "checks": [bad]}, {"rank": 0, "checks": [ok]}])
    assert check.status == "fail_accuracy"
    assert check.message == "rank 1: weight differs; rank 0 pass, rank 1 fail_accuracy"


def test_fewer_gpus_than_ranks_is_unsupported_before_any_launch(monkeypatch, tmp_path):
    import torch

    import benchmarks.distributed as suite

    every = (True, "")
    caps = gates.Capabilities(cuda=every, fp8=every, fp8_block=every, mxfp8=every, nvfp4=every)
    monkeypatch.setenv(gates.CAPABILITIES_ENV, json.dumps(caps.to_json()))
    monkeypatch.setenv(records.RECORD_DIR_ENV, str(tmp_path))
    monkeypatch.setattr(suite, "current_profile", lambda: get_profile("full"))
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(suite.topology, "interconnect", lambda world_size, device: "none")
    with pytest.raises(NotImplementedError, match="2 ranks need 2 GPUs; 1 visible"):
        suite.FsdpCheckpoint().setup("nvfp4", 2)
    (path,) = (tmp_path / "cases").glob("*.json")
    verdict = json.loads(path.read_text())["verdict"]
    assert verdict["status"] == "unsupported" and verdict["reason"] == "2 ranks need 2 GPUs; 1 visible"


def test_a_rank_that_raises_in_the_step_is_the_steps_error_with_its_exception():
    from benchmarks.harness.distributed.launcher import LaunchOutcome, RankResult
    from benchmarks.harness.distributed.verdict import failure_checks

    error = {
        "status": "error",
        "exception_class": "AssertionError",
        "message": "no fsdp_pre_all_gather",
        "traceback_head": "Traceback ...",
        "phase": "fsdp_step",
        "at": 1.0,
    }
    outcome = LaunchOutcome(
        "error",
        [RankResult(0, "ok", 0), RankResult(1, "error", 1, error=error)],
        1.0,
        message="rank 1: AssertionError: no fsdp_pre_all_gather",
        failed_rank=1,
    )
    (check,) = failure_checks(outcome)
    assert (check.check, check.status, check.exception_class) == ("fsdp_step", "error", "AssertionError")
    assert check.message.startswith("rank 1:")

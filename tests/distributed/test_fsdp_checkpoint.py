"""The FSDP2 checkpoint case's ranks for real on CPU (world size 2 over gloo): a perturbation that loses the
load fails both checks, the worst rank decides each check, a rank's exception is the step's error; on a GPU
machine with fewer GPUs than ranks the case is `unsupported` before any rank starts. Its run through asv
(TE's recipes unsupported, the torch-ref round trip passing) is tests/distributed/test_suite_run.py's."""

from __future__ import annotations

import json

import pytest

from benchmarks.harness import gates, records
from benchmarks.harness.distributed import fsdp_checkpoint
from benchmarks.harness.distributed.launcher import launch
from benchmarks.harness.profiles import get_profile

JOB = fsdp_checkpoint.FsdpJob(
    backend="torch-ref",
    recipe="torch-ref",
    device="cpu",
    world_size=2,
    in_features=128,
    out_features=128,
    tokens=32,
)


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

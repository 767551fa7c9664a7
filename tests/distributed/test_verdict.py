"""Rank reports -> checks: the worst rank decides, compiled must equal eager bit for bit, a launch that
failed becomes one check that says why, and the slowest rank's time is the case's."""

from __future__ import annotations

import math

import pytest

from benchmarks.harness.distributed import verdict
from benchmarks.harness.distributed.launcher import LaunchOutcome, RankResult
from benchmarks.harness.distributed.scenario import Scenario
from benchmarks.harness.records import CaseRecord


def _scenario(mode: str = "eager", recipe: str = "bf16", backend: str = "te") -> Scenario:
    return Scenario(
        backend=backend,
        recipe=recipe,
        parallel_mode="column",
        sequence_parallel=True,
        mode=mode,
        world_size=2,
        device="cuda",
        shape=(64, 2, 128),
        out_features=128,
    )


def _report(rank: int, rel: float = 1e-3, compiled: float = 0.0, samples=(1.0, 2.0), **extra) -> dict:
    return {
        "rank": rank,
        "rel_l2": {"output": rel, "dgrad": rel / 2, "wgrad": rel / 4},
        "compiled_max_abs_diff": {"output": 0.0, "dgrad": compiled, "wgrad": 0.0},
        "compile_seconds": 10.0 + rank,
        "graph_breaks": rank,
        "samples": list(samples),
        **extra,
    }


def _verdict(checks) -> dict:
    record = CaseRecord(case="distributed.LinearTensorParallel", params={}, labels={}, checks=list(checks))
    return record.verdict().to_json()


def test_all_ranks_within_tolerance_pass_with_the_worst_rank_as_value():
    checks = verdict.case_checks(_scenario(), [_report(1, rel=4e-3), _report(0, rel=2e-3)])
    assert [c.check for c in checks] == ["output_vs_single_gpu", "dgrad_vs_single_gpu", "wgrad_vs_single_gpu"]
    assert all(c.status == "pass" for c in checks)
    assert checks[0].value == 4e-3 and checks[0].tolerance == verdict.TOLERANCE["bf16"]
    assert "per rank 0.002, 0.004" in checks[0].message


def test_one_wrong_shard_fails_the_case_and_names_its_rank():
    checks = verdict.case_checks(_scenario(), [_report(0), _report(1, rel=1.41)])
    v = _verdict(checks)
    assert v["status"] == "fail_accuracy" and v["check"] == "output_vs_single_gpu"
    assert v["message"].startswith("rank 1 exceeds 0.01")


def test_nan_on_any_rank_fails():
    checks = verdict.case_checks(_scenario(), [_report(0, rel=math.nan), _report(1)])
    assert checks[0].status == "fail_accuracy"
    assert "value" not in checks[0].to_json()  # JSON has no NaN; the message keeps the fact
    assert "nan" in checks[0].to_json()["message"]


def test_the_recipe_sets_the_tolerance():
    reports = [_report(0, rel=0.05), _report(1, rel=0.05)]
    assert _verdict(verdict.case_checks(_scenario(recipe="bf16"), reports))["status"] == "fail_accuracy"
    assert _verdict(verdict.case_checks(_scenario(recipe="fp8-current"), reports))["status"] == "pass"


def test_compiled_must_equal_eager_bit_for_bit_and_comes_first():
    scenario = _scenario(mode="default")
    equal = verdict.case_checks(scenario, [_report(0), _report(1)])
    assert equal[0].check == "compiled_vs_eager" and equal[0].status == "pass" and equal[0].tolerance == 0.0
    differs = verdict.case_checks(scenario, [_report(0), _report(1, compiled=2.0**-8)])
    v = _verdict(differs)
    assert v["check"] == "compiled_vs_eager" and v["status"] == "fail_accuracy"
    assert v["value"] == 2.0**-8 and "largest in dgrad" in v["message"]


def test_eager_cases_have_no_compiled_check_and_no_compile_metrics():
    checks = verdict.case_checks(_scenario(), [_report(0), _report(1)])
    assert "compiled_vs_eager" not in [c.check for c in checks]
    assert verdict.metrics(_scenario(), [_report(0), _report(1)]) == {}
    assert verdict.metrics(_scenario(mode="default"), [_report(0), _report(1)]) == {
        "compile_seconds": (11.0, "seconds"),
        "graph_breaks": (1.0, "count"),
    }


def test_columnwise_gather_must_be_bitwise():
    gathered_ok = {"columnwise_gather": {"input": [0, 9224]}}
    gathered_bad = {"columnwise_gather": {"input": [4506, 9224]}}
    ok = verdict.case_checks(
        _scenario("eager", "torch-ref", "torch-ref"), [_report(0, **gathered_ok), _report(1, **gathered_ok)]
    )
    assert ok[-1].check == "columnwise_gather_bitwise" and ok[-1].status == "pass"
    assert "18448 bytes compared" in ok[-1].message
    bad = verdict.case_checks(
        _scenario("eager", "torch-ref", "torch-ref"), [_report(0, **gathered_ok), _report(1, **gathered_bad)]
    )
    assert bad[-1].status == "fail_accuracy" and bad[-1].value == 4506


def test_reports_of_the_wrong_number_of_ranks_are_refused():
    with pytest.raises(ValueError, match="1 reports for 2 ranks"):
        verdict.case_checks(_scenario(), [_report(0)])


def test_the_slowest_rank_makes_each_sample():
    reports = [_report(0, samples=(1.0, 5.0, 2.0)), _report(1, samples=(3.0, 1.0, 2.5))]
    assert verdict.slowest_rank_samples(reports) == [3.0, 5.0, 2.5]
    with pytest.raises(ValueError, match="different numbers of samples"):
        verdict.slowest_rank_samples([_report(0, samples=(1.0,)), _report(1, samples=(1.0, 2.0))])


def test_a_timeout_is_a_timeout_verdict():
    outcome = LaunchOutcome(
        "timeout",
        [RankResult(0, "killed", -9), RankResult(1, "killed", -9)],
        70.0,
        message="rank(s) [0, 1] still running after the 60 s deadline",
    )
    (check,) = verdict.failure_checks(outcome)
    assert check.status == "timeout" and check.check == "launch" and "60 s deadline" in check.message


def test_a_rank_exception_is_filed_under_its_phase_and_an_oom_stays_an_oom():
    error = {
        "status": "error",
        "exception_class": "RuntimeError",
        "message": "bad shape",
        "traceback_head": "Traceback ...",
        "phase": "compiled",
        "at": 1.0,
    }
    outcome = LaunchOutcome(
        "error",
        [RankResult(0, "killed", -9), RankResult(1, "error", 1, error=error)],
        3.0,
        message="rank 1: RuntimeError: bad shape",
        failed_rank=1,
    )
    (check,) = verdict.failure_checks(outcome)
    assert (check.check, check.status, check.exception_class) == (
        "compiled_vs_eager",
        "error",
        "RuntimeError",
    )
    assert check.message == "rank 1: RuntimeError: bad shape" and check.traceback_head == "Traceback ..."
    oom = dict(error, status="oom", exception_class="OutOfMemoryError", phase="timing")
    outcome.ranks[1] = RankResult(1, "oom", 1, error=oom)
    (check,) = verdict.failure_checks(outcome)
    assert (check.check, check.status) == ("timing", "oom")


def test_a_crash_without_a_report_is_an_error():
    outcome = LaunchOutcome(
        "error",
        [RankResult(0, "killed", -9), RankResult(1, "crashed", -11)],
        3.0,
        message="rank 1 exited with status -11 without a report",
        failed_rank=1,
    )
    (check,) = verdict.failure_checks(outcome)
    assert (check.status, check.exception_class, check.check) == ("error", "RankCrashed", "launch")

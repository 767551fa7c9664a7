"""The torch-ref backend at world size 2 on CPU with gloo: the whole path of a case (launch, reference,
sharded layer, checks, timing) and the faults each check exists to catch."""

from __future__ import annotations

import pytest

from benchmarks.harness.distributed import verdict
from benchmarks.harness.distributed.launcher import launch
from benchmarks.harness.distributed.scenario import Scenario
from benchmarks.harness.distributed.worker import run_scenario
from benchmarks.harness.timing import TimingPlan

pytestmark = pytest.mark.long_running

PLAN = TimingPlan(budget_s=0.05, min_samples=3, max_samples=5, min_warmup_calls=1, warmup_s=0.0)


def _run(parallel: str, sp: bool, mode: str = "eager", fault: str | None = None, deadline_s: float = 90):
    scenario = Scenario(
        backend="torch-ref",
        recipe="torch-ref",
        parallel_mode=parallel,
        sequence_parallel=sp,
        mode=mode,
        world_size=2,
        device="cpu",
        shape=(32, 2, 128),
        out_features=64,
        timing=PLAN,
        fault=fault,
    )
    outcome = launch(run_scenario, scenario, 2, "cpu", deadline_s=deadline_s, grace_s=3)
    return scenario, outcome


def _checks(scenario, outcome) -> dict:
    assert outcome.status == "ok", outcome.message
    return {c.check: c for c in verdict.case_checks(scenario, outcome.reports)}


@pytest.mark.parametrize(
    ("parallel", "sp"), [("column", True), ("column", False), ("row", True), ("row", False)]
)
def test_a_correct_sharding_matches_the_single_rank_layer(parallel, sp):
    scenario, outcome = _run(parallel, sp)
    checks = _checks(scenario, outcome)
    expected = {"output_vs_single_gpu", "dgrad_vs_single_gpu", "wgrad_vs_single_gpu"}
    if sp:  # column: the input is gathered; row: the output gradient is
        expected.add("columnwise_gather_bitwise")
        assert checks["columnwise_gather_bitwise"].value == 0.0
    assert set(checks) == expected
    assert all(c.status == "pass" for c in checks.values()), [c.to_json() for c in checks.values()]
    samples = verdict.slowest_rank_samples(outcome.reports)
    assert 3 <= len(samples) <= 5 and all(s > 0 for s in samples)


def test_a_rank_holding_the_wrong_weight_shard_fails():
    scenario, outcome = _run("column", True, fault="wrong_weight_shard")
    checks = _checks(scenario, outcome)
    assert checks["output_vs_single_gpu"].status == "fail_accuracy"
    assert checks["output_vs_single_gpu"].value > 1.0  # an unrelated shard, not a rounding difference
    assert checks["dgrad_vs_single_gpu"].status == "fail_accuracy"


@pytest.mark.parametrize("parallel", ["column", "row"])
def test_columnwise_data_gathered_without_reorganising_it_fails(parallel):
    scenario, outcome = _run(parallel, True, fault="skip_columnwise_reorder")
    checks = _checks(scenario, outcome)
    assert checks["columnwise_gather_bitwise"].status == "fail_accuracy"
    assert checks["columnwise_gather_bitwise"].value > 0
    assert checks["wgrad_vs_single_gpu"].status == "fail_accuracy"
    assert checks["output_vs_single_gpu"].status == "pass"  # forward uses row-wise data only


def test_a_hung_rank_becomes_a_timeout_verdict():
    _, outcome = _run("column", True, fault="hang", deadline_s=12)
    (check,) = verdict.failure_checks(outcome)
    assert check.status == "timeout"


def test_a_rank_that_raises_becomes_an_error_of_the_sharded_step():
    _, outcome = _run("row", True, fault="raise")
    (check,) = verdict.failure_checks(outcome)
    assert (check.status, check.check, check.exception_class) == (
        "error",
        "sharded_vs_single_gpu",
        "RuntimeError",
    )
    assert check.message == "rank 1: RuntimeError: injected failure on rank 1"


def test_compiled_equals_eager_and_compile_time_is_measured():
    scenario, outcome = _run("column", True, mode="default", deadline_s=300)
    checks = _checks(scenario, outcome)
    assert checks["compiled_vs_eager"].status == "pass" and checks["compiled_vs_eager"].value == 0.0
    metrics = verdict.metrics(scenario, outcome.reports)
    assert metrics["compile_seconds"][0] > 0

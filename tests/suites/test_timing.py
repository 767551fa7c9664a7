"""Timing statistics and sample planning on the CPU (deterministic clock)."""

import statistics

import pytest

from benchmarks.harness import timing


class FakeClock:
    """Each call of the timed function advances time by the next duration."""

    def __init__(self, durations: list[float]) -> None:
        self.now = 0.0
        self.durations = iter(durations)

    def tick(self) -> None:
        self.now += next(self.durations)

    def __call__(self) -> float:
        return self.now


def test_cpu_timing_keeps_every_sample_after_the_warmup() -> None:
    clock = FakeClock([0.01] * 3 + [0.001 * (i + 1) for i in range(10)])
    plan = timing.TimingPlan(budget_s=0.1, min_samples=10, max_samples=10, warmup_s=0.0, min_warmup_calls=3)
    result = timing.cpu_samples(clock.tick, plan, clock=clock)
    assert result.samples == pytest.approx([0.001 * (i + 1) for i in range(10)])
    assert result.median == pytest.approx(statistics.median(result.samples))
    assert result.asv_payload() == {"samples": result.samples, "number": 1}


def test_sample_count_fills_the_budget_within_bounds() -> None:
    plan = timing.TimingPlan(budget_s=1.0, min_samples=10, max_samples=100)
    assert timing.sample_count(0.02, plan) == 50
    assert timing.sample_count(1.0, plan) == 10
    assert timing.sample_count(1e-6, plan) == 100


def test_kernel_calls_fill_the_sample_budget_within_bounds() -> None:
    from benchmarks.harness import kernels

    assert kernels.kernel_call_count(0.4, 0.3) == kernels.KERNEL_MIN_CALLS  # te-ref te.Linear: 0.4 s a step
    assert kernels.kernel_call_count(0.03, 0.3) == 10
    assert kernels.kernel_call_count(1e-5, 0.3) == kernels.KERNEL_CALLS
    assert kernels.kernel_call_count(0.0, 0.3) == kernels.KERNEL_CALLS


def test_coefficient_of_variation() -> None:
    assert timing.coefficient_of_variation([1.0, 1.0, 1.0]) == 0.0
    assert timing.coefficient_of_variation([1.0, 2.0, 3.0]) == pytest.approx(0.5)
    assert timing.coefficient_of_variation([5.0]) == 0.0


def test_real_cpu_timing_of_a_real_call_is_positive_and_plausible() -> None:
    import torch

    a = torch.randn(128, 128)
    plan = timing.TimingPlan(budget_s=0.05, min_samples=5, max_samples=20)
    result = timing.measure(lambda: a @ a, "cpu", plan)
    assert 5 <= len(result.samples) <= 20
    assert all(0 < s < 1.0 for s in result.samples)


def test_a_case_that_asks_for_a_long_span_of_samples_gets_it_in_every_profile():
    from benchmarks.harness.case import LONG_SPAN_MAX_SAMPLES, Prepared, sample_plan
    from benchmarks.harness.profiles import get_profile

    for name in ("full", "quick", "ci"):
        profile = get_profile(name)
        usual = sample_plan(profile, Prepared(fn=lambda: None, device="cuda", flush_l2=False))
        assert (usual.budget_s, usual.max_samples) == (profile.sample_budget_s, profile.max_samples)
        assert usual.flush_l2 is False
        long = sample_plan(profile, Prepared(fn=lambda: None, device="cuda", sample_seconds=2.0))
        assert (long.budget_s, long.max_samples, long.min_samples) == (
            2.0,
            LONG_SPAN_MAX_SAMPLES,
            profile.min_samples,
        )
        # a 1.6 ms GEMM fills the 2 s with 1000 samples; the profile's cap alone stops at 0.16 s or less
        assert timing.sample_count(1.64e-3, long) == 1000 and timing.sample_count(1.64e-3, usual) <= 100

"""Timing: many samples per case, in seconds.

On a GPU every sample is one call between two CUDA events, after a write of a buffer twice the L2
size (so each call starts with a cold L2, as in `triton.testing.do_bench`); on the CPU each sample is
one call timed with perf_counter. Warm-up runs first (compilation, autotuning, cuBLASLt heuristics,
amax history), then the number of samples is chosen to fill a time budget within [min, max].

Kernel time and the kernel table come from a profiler pass of their own after the samples
(benchmarks.harness.kernels); process CPU time per call from calls of its own (`cpu_seconds`).
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

DEFAULT_L2_BYTES = 64 * 2**20


@dataclass(frozen=True)
class TimingPlan:
    budget_s: float = 0.5
    min_samples: int = 10
    max_samples: int = 100
    warmup_s: float = 0.025
    min_warmup_calls: int = 3
    flush_l2: bool = True


@dataclass(frozen=True)
class Timing:
    samples: list[float]  # seconds, one per call

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    @property
    def mean(self) -> float:
        return statistics.fmean(self.samples)

    def asv_payload(self) -> dict[str, Any]:
        """What a `track_` returns so asv stores samples and statistics (research/asv.md §3)."""
        return {"samples": list(self.samples), "number": 1}


def coefficient_of_variation(values: Sequence[float]) -> float:
    if len(values) < 2:
        return 0.0
    mean = statistics.fmean(values)
    if mean == 0:
        return math.inf
    return statistics.stdev(values) / mean


def sample_count(per_call_s: float, plan: TimingPlan) -> int:
    if per_call_s <= 0:
        return plan.max_samples
    wanted = int(plan.budget_s / per_call_s)
    return max(plan.min_samples, min(plan.max_samples, wanted))


def cpu_samples(
    fn: Callable[[], Any], plan: TimingPlan, clock: Callable[[], float] = time.perf_counter
) -> Timing:
    def one() -> float:
        t0 = clock()
        fn()
        return clock() - t0

    first = one()
    elapsed = first
    calls = 1
    while calls < plan.min_warmup_calls or elapsed < plan.warmup_s:
        elapsed += one()
        calls += 1
    n = sample_count(elapsed / calls, plan)
    return Timing([one() for _ in range(n)])


class L2Flusher:
    def __init__(self, torch: Any, device: Any) -> None:
        props = torch.cuda.get_device_properties(device)
        l2 = getattr(props, "L2_cache_size", 0) or DEFAULT_L2_BYTES
        self.buffer = torch.empty(2 * l2 // 4, dtype=torch.int32, device=device)

    def __call__(self) -> None:
        self.buffer.zero_()


def cuda_samples(fn: Callable[[], Any], plan: TimingPlan) -> Timing:
    import torch

    device = torch.cuda.current_device()
    flush = L2Flusher(torch, device) if plan.flush_l2 else (lambda: None)

    # estimate one call, as do_bench does, then warm up for warmup_s
    fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(5):
        fn()
    end.record()
    torch.cuda.synchronize()
    per_call_s = start.elapsed_time(end) / 5 / 1e3
    warm = max(plan.min_warmup_calls, int(plan.warmup_s / max(per_call_s, 1e-7)))
    for _ in range(min(warm, 1000)):
        fn()

    n = sample_count(per_call_s, plan)
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
    for i in range(n):
        flush()
        starts[i].record()
        fn()
        ends[i].record()
    torch.cuda.synchronize()
    return Timing([s.elapsed_time(e) / 1e3 for s, e in zip(starts, ends, strict=True)])


CPU_TIME_BUDGET_S = 0.05
CPU_TIME_MIN_CALLS = 5
CPU_TIME_MAX_CALLS = 50


def cpu_time_call_count(per_call_s: float) -> int:
    """Calls of `cpu_seconds`: as many as CPU_TIME_BUDGET_S of wall time holds, within the bounds."""
    if per_call_s <= 0:
        return CPU_TIME_MAX_CALLS
    return max(CPU_TIME_MIN_CALLS, min(CPU_TIME_MAX_CALLS, int(CPU_TIME_BUDGET_S / per_call_s)))


def process_cpu_samples(
    fn: Callable[[], Any], calls: int, clock: Callable[[], float] = time.process_time
) -> list[float]:
    """The process's CPU time (every thread, user and system) of each of `calls` calls. Nothing waits
    for the device between calls: a call's own synchronisations count (a spinning wait is CPU time), the
    device's work does not."""
    samples = []
    for _ in range(calls):
        t0 = clock()
        fn()
        samples.append(clock() - t0)
    return samples


def measure(fn: Callable[[], Any], device: str, plan: TimingPlan) -> Timing:
    return cuda_samples(fn, plan) if device == "cuda" else cpu_samples(fn, plan)

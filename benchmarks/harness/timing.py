"""Timing: many samples per case, in seconds.

On a GPU every sample is one call between two CUDA events, after a write of a buffer twice the L2
size (so each call starts with a cold L2, as in `triton.testing.do_bench`); on the CPU each sample is
one call timed with perf_counter. Warm-up runs first (compilation, autotuning, cuBLASLt heuristics,
amax history), then the number of samples is chosen to fill a time budget within [min, max].

Kernel time: on a GPU, after the event samples, a few more calls run under torch.profiler (Kineto's
CUPTI activity records, CUDA only) and each call's kernels, memsets and copies are summed. That is the
device's own work, free of launch gaps and host overhead; event time minus kernel time is the host's
share. The L2 flush before each call is the boundary between calls, and its activities are left out.
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


class _L2Flusher:
    def __init__(self, torch: Any, device: Any) -> None:
        props = torch.cuda.get_device_properties(device)
        l2 = getattr(props, "L2_cache_size", 0) or DEFAULT_L2_BYTES
        self.buffer = torch.empty(2 * l2 // 4, dtype=torch.int32, device=device)

    def __call__(self) -> None:
        self.buffer.zero_()


def cuda_samples(fn: Callable[[], Any], plan: TimingPlan) -> Timing:
    import torch

    device = torch.cuda.current_device()
    flush = _L2Flusher(torch, device) if plan.flush_l2 else (lambda: None)

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


KERNEL_CALLS = 20
KERNEL_MIN_CALLS = 5


def kernel_call_count(per_call_s: float, plan: TimingPlan) -> int:
    """Calls under the profiler: as many as the sample budget holds, between KERNEL_MIN_CALLS and
    KERNEL_CALLS (a 0.4 s te.Linear step of TE's reference NVFP4 spent 8 s of its 22 s on 20 of them)."""
    if per_call_s <= 0:
        return KERNEL_CALLS
    return max(KERNEL_MIN_CALLS, min(KERNEL_CALLS, math.ceil(plan.budget_s / per_call_s)))


def _gpu_activities(prof: Any) -> list[tuple[int, int, str]]:
    """(start ns, duration ns, name) of every device activity a profiler recorded, in start order."""
    from torch.autograd import DeviceType

    events = prof.profiler.kineto_results.events()
    found = [(e.start_ns(), e.duration_ns(), e.name()) for e in events if e.device_type() == DeviceType.CUDA]
    return sorted(found)


def per_call_sums(activities: list[tuple[int, int, str]], boundary: set[str], calls: int) -> list[float]:
    """Seconds of device work of each call, where a boundary (one or more activities with its names)
    stands before every call and after the last: the activities between two boundaries, boundary
    activities left out. Empty when the boundaries do not split the record into `calls` calls that
    each did some work (the call itself ran an activity of a boundary's name)."""
    sums: list[float] = []
    in_boundary = False
    for _, duration, name in activities:
        if name in boundary:
            if not in_boundary:
                sums.append(0.0)
            in_boundary = True
            continue
        in_boundary = False
        if sums:
            sums[-1] += duration / 1e9
    if len(sums) != calls + 1 or sums[-1] != 0.0 or not all(s > 0 for s in sums[:-1]):
        return []
    return sums[:-1]


def kernel_samples(fn: Callable[[], Any], plan: TimingPlan, calls: int = KERNEL_CALLS) -> list[float]:
    """Summed device time of each of `calls` calls (seconds), from CUPTI through torch.profiler."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    device = torch.cuda.current_device()
    if plan.flush_l2:
        flusher = _L2Flusher(torch, device)
    else:  # a one-element write marks the boundary between calls
        marker = torch.zeros(1, dtype=torch.int32, device=device)
        flusher = marker.zero_  # type: ignore[assignment]
    with profile(activities=[ProfilerActivity.CUDA]) as alone:
        flusher()
        torch.cuda.synchronize()
    boundary = {name for _, _, name in _gpu_activities(alone)}
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            flusher()
            fn()
        flusher()
        torch.cuda.synchronize()
    return per_call_sums(_gpu_activities(prof), boundary, calls)


def measure(fn: Callable[[], Any], device: str, plan: TimingPlan) -> Timing:
    return cuda_samples(fn, plan) if device == "cuda" else cpu_samples(fn, plan)

"""Timing inside the ranks: every rank times the same calls, the parent keeps the slowest per sample.

The ranks agree on every count (warm-up calls, samples) through the group, because each call holds
collectives and a rank that made one call more would wait forever. On a GPU each sample starts after
an all-reduce of one value, which lines the ranks' streams up, and is timed with CUDA events after an
L2 flush (as the single-process harness does); on the CPU each sample starts after a barrier and is
timed with perf_counter.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from benchmarks.harness.timing import DEFAULT_L2_BYTES, TimingPlan, sample_count

ESTIMATE_CALLS = 3
MAX_WARMUP_CALLS = 200


def _agree_max(value: float, group: Any, device: Any) -> float:
    import torch
    import torch.distributed as dist

    t = torch.tensor([value], dtype=torch.float64, device=device)
    dist.all_reduce(t, op=dist.ReduceOp.MAX, group=group)
    return float(t.item())


def _counts(per_call_s: float, plan: TimingPlan) -> tuple[int, int]:
    """(warm-up calls, samples) for an agreed per-call time."""
    warm = max(plan.min_warmup_calls, int(plan.warmup_s / max(per_call_s, 1e-7)))
    return min(warm, MAX_WARMUP_CALLS), sample_count(per_call_s, plan)


def cpu_samples(fn: Callable[[], Any], plan: TimingPlan, group: Any) -> list[float]:
    import torch.distributed as dist

    fn()
    dist.barrier(group=group)
    t0 = time.perf_counter()
    for _ in range(ESTIMATE_CALLS):
        fn()
    per_call = _agree_max((time.perf_counter() - t0) / ESTIMATE_CALLS, group, "cpu")
    warm, n = _counts(per_call, plan)
    for _ in range(warm):
        fn()
    samples = []
    for _ in range(n):
        dist.barrier(group=group)
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    return samples


def cuda_samples(fn: Callable[[], Any], plan: TimingPlan, group: Any) -> list[float]:
    import torch
    import torch.distributed as dist

    device = torch.device("cuda", torch.cuda.current_device())
    props = torch.cuda.get_device_properties(device)
    l2 = getattr(props, "L2_cache_size", 0) or DEFAULT_L2_BYTES
    flush_buffer = torch.empty(2 * l2 // 4, dtype=torch.int32, device=device) if plan.flush_l2 else None
    token = torch.zeros(1, dtype=torch.float32, device=device)

    fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    dist.all_reduce(token, group=group)
    start.record()
    for _ in range(ESTIMATE_CALLS):
        fn()
    end.record()
    torch.cuda.synchronize()
    per_call = _agree_max(start.elapsed_time(end) / ESTIMATE_CALLS / 1e3, group, device)
    warm, n = _counts(per_call, plan)
    for _ in range(warm):
        fn()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
    for i in range(n):
        if flush_buffer is not None:
            flush_buffer.zero_()
        dist.all_reduce(token, group=group)
        starts[i].record()
        fn()
        ends[i].record()
    torch.cuda.synchronize()
    return [s.elapsed_time(e) / 1e3 for s, e in zip(starts, ends, strict=True)]


def samples_on_ranks(fn: Callable[[], Any], device: str, plan: TimingPlan, group: Any) -> list[float]:
    return cuda_samples(fn, plan, group) if device == "cuda" else cpu_samples(fn, plan, group)

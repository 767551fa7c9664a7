"""Which kernels a case's call runs, and what the host does to launch them: the record's `kernels` table.

On a GPU it comes from the profiler pass that gives `kernel_seconds` (no pass of its own): a few more
calls run under torch.profiler with CUDA activities, which Kineto records through CUPTI as the device's
kernels, memsets and copies and, in the same pass, the CUDA runtime and driver calls that launched them
(torch's CUDA activity set includes CUDA_RUNTIME and CUDA_DRIVER: no CPU activity is needed for them).
A one-element write (or the L2 flush) before every call and after the last is the boundary between calls
on the device; each call's device activities are summed for `kernel_seconds` and grouped by normalised
name (benchmarks.harness.kernel_names) for the table. The host's runtime calls are counted over the whole
pass, less those of the boundaries (measured alone) and of the final synchronisation: launches,
synchronisations and blocking copies per call.

On a CPU a short torch.profiler pass over a few calls, each inside a `record_function` marker, gives
the top-level aten operators of a call (the first aten operator on each path below the marker, nesting
read from the operators' intervals on their thread), with device `cpu` and no launches.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from benchmarks.harness.kernel_names import normalise

KERNEL_CALLS = 20
KERNEL_MIN_CALLS = 5
CPU_PROFILED_CALLS = 5
CPU_PROFILE_MIN_CALLS = 2
# rows kept in a table; the rest are summed into one row named OTHER
MAX_ROWS = 64
OTHER = "(other kernels)"
CALL_MARKER = "tewatch::call"
# what a case prints to stderr (kept in the sidecar's asv-stderr.log): the seconds its profiler pass took
COST_MARKER = "tewatch-kernels-seconds: "

LAUNCHES = frozenset(
    {
        "cudaLaunchKernel",
        "cudaLaunchKernelExC",
        "cudaLaunchCooperativeKernel",
        "cudaLaunchCooperativeKernelMultiDevice",
        "cudaGraphLaunch",
        "cuLaunchKernel",
        "cuLaunchKernelEx",
        "cuLaunchCooperativeKernel",
        "cuGraphLaunch",
    }
)
# the host waits for the device: synchronisations, and copies that return only when done (cudaMemcpy,
# unlike cudaMemcpyAsync, blocks the host; `.item()` is a cudaMemcpyAsync and a cudaStreamSynchronize)
SYNCS = frozenset(
    {
        "cudaStreamSynchronize",
        "cudaDeviceSynchronize",
        "cudaEventSynchronize",
        "cuStreamSynchronize",
        "cuCtxSynchronize",
        "cuEventSynchronize",
        "cudaMemcpy",
        "cudaMemcpy2D",
        "cuMemcpyDtoH",
    }
)
_API_CALL = re.compile(r"^cu(?:da)?[A-Z]")
# CUPTI names some API calls by version and stream mode: cudaLaunchKernelExC_v11060, cuMemcpyDtoH_v2,
# cudaStreamSynchronize_ptsz
_API_SUFFIX = re.compile(r"(?:_v\d+|_pt(?:sz|ds))+$")


@dataclass(frozen=True, order=True)
class Activity:
    """One record of a profiler pass: a device activity (kernel, memset, copy) or a host API call."""

    start_ns: int
    duration_ns: int
    name: str
    on_device: bool


def kernel_call_count(per_call_s: float, budget_s: float) -> int:
    """Calls under the profiler: as many as the sample budget holds, between KERNEL_MIN_CALLS and
    KERNEL_CALLS (a 0.4 s te.Linear step of TE's reference NVFP4 spent 8 s of its 22 s on 20 of them)."""
    if per_call_s <= 0:
        return KERNEL_CALLS
    return max(KERNEL_MIN_CALLS, min(KERNEL_CALLS, math.ceil(budget_s / per_call_s)))


def cpu_profile_call_count(per_call_s: float, budget_s: float) -> int:
    """Calls under the CPU profiler: CPU_PROFILED_CALLS, fewer (down to CPU_PROFILE_MIN_CALLS) for a call
    so long that they would take more than the sample budget."""
    if per_call_s <= 0:
        return CPU_PROFILED_CALLS
    return max(CPU_PROFILE_MIN_CALLS, min(CPU_PROFILED_CALLS, math.floor(budget_s / per_call_s)))


# -- the rules, on plain records (unit-tested with rows shaped like Kineto's) -----------------------------


def split_calls(activities: Sequence[Activity], boundary: set[str], calls: int) -> list[list[Activity]]:
    """The device activities of each call, where a boundary (one or more activities with its names)
    stands before every call and after the last: those between two boundaries, boundary activities left
    out. Empty when the boundaries do not split the record into `calls` calls that each did some work
    (the call itself ran an activity of a boundary's name)."""
    split: list[list[Activity]] = []
    in_boundary = False
    for activity in activities:
        if not activity.on_device:
            continue
        if activity.name in boundary:
            if not in_boundary:
                split.append([])
            in_boundary = True
            continue
        in_boundary = False
        if split:
            split[-1].append(activity)
    if len(split) != calls + 1 or split[-1] or not all(split[:-1]):
        return []
    return split[:-1]


def per_call_seconds(split: Sequence[Sequence[Activity]]) -> list[float]:
    return [sum(a.duration_ns for a in call) / 1e9 for call in split]


def host_counts(activities: Iterable[Activity]) -> dict[str, int]:
    """Launches and synchronisations among the host's API calls of a pass."""
    counts = {"launches": 0, "syncs": 0}
    for activity in activities:
        if activity.on_device:
            continue
        name = _API_SUFFIX.sub("", activity.name)
        if name in LAUNCHES:
            counts["launches"] += 1
        elif name in SYNCS:
            counts["syncs"] += 1
    return counts


def table_rows(per_name: dict[str, list[float]], calls: int) -> list[dict[str, Any]]:
    """One row per name, largest total first: launches per case call, seconds in one case call, seconds
    per launch; past MAX_ROWS the rest summed into one OTHER row."""
    ordered = sorted(per_name.items(), key=lambda item: (-sum(item[1]), item[0]))
    if len(ordered) > MAX_ROWS:
        rest = [d for _, durations in ordered[MAX_ROWS - 1 :] for d in durations]
        ordered = [*ordered[: MAX_ROWS - 1], (OTHER, rest)]
    return [
        {
            "name": name,
            "calls_per_call": len(durations) / calls,
            "total_seconds": sum(durations) / calls,
            "mean_seconds": sum(durations) / len(durations),
        }
        for name, durations in ordered
    ]


def cuda_table(
    split: Sequence[Sequence[Activity]], host: dict[str, int], boundary_host: dict[str, int]
) -> dict[str, Any]:
    """The record's `kernels` of a GPU case: `split` the calls' device activities, `host` the counts of
    the whole pass, `boundary_host` those of one boundary and the final synchronisation alone."""
    calls = len(split)
    per_name: dict[str, list[float]] = defaultdict(list)
    copies = 0
    for call in split:
        for activity in call:
            per_name[normalise(activity.name)].append(activity.duration_ns / 1e9)
            copies += activity.name.startswith("Memcpy")
    # the pass ran calls + 1 boundaries and one final synchronisation; the one alone ran one of each
    launches = host["launches"] - (calls + 1) * boundary_host["launches"]
    syncs = host["syncs"] - boundary_host["syncs"]
    return {
        "device": "cuda",
        "profiled_calls": calls,
        "table": table_rows(per_name, calls),
        "launches_per_call": max(launches, 0) / calls,
        "syncs_per_call": max(syncs, 0) / calls,
        "copies_per_call": copies / calls,
    }


@dataclass(frozen=True)
class CpuOp:
    """One operator of a CPU profile: its name, wall duration and the index of its parent (or None)."""

    name: str
    duration_us: float
    parent: int | None


def top_level_ops(ops: Sequence[CpuOp], marker: str = CALL_MARKER) -> tuple[int, dict[str, list[float]]]:
    """(calls, name -> seconds of each of its runs): the aten operators that are the first aten operator
    on their path below a call's marker."""
    calls = sum(op.name == marker for op in ops)
    per_name: dict[str, list[float]] = defaultdict(list)
    for op in ops:
        if not op.name.startswith("aten::"):
            continue
        parent = op.parent
        while parent is not None and ops[parent].name != marker and not ops[parent].name.startswith("aten::"):
            parent = ops[parent].parent
        if parent is not None and ops[parent].name == marker:
            per_name[op.name].append(op.duration_us / 1e6)
    return calls, per_name


def cpu_table(ops: Sequence[CpuOp]) -> dict[str, Any] | None:
    calls, per_name = top_level_ops(ops)
    if calls == 0:
        return None
    return {
        "device": "cpu",
        "profiled_calls": calls,
        "table": table_rows(per_name, calls),
        "launches_per_call": 0.0,
        "syncs_per_call": 0.0,
        "copies_per_call": 0.0,
    }


# -- the profiler passes -------------------------------------------------------------------------------


def kineto_activities(prof: Any) -> list[Activity]:
    """Device activities and CUDA runtime/driver calls of a torch.profiler pass, in start order."""
    from torch.autograd import DeviceType

    found = []
    for e in prof.profiler.kineto_results.events():
        on_device = e.device_type() == DeviceType.CUDA
        name = e.name()
        if on_device or _API_CALL.match(name):
            found.append(Activity(e.start_ns(), e.duration_ns(), name, on_device))
    return sorted(found)


@dataclass(frozen=True)
class CudaProfile:
    samples: list[float]  # device seconds of each profiled call; empty when the calls could not be split
    table: dict[str, Any] | None


def profile_cuda(fn: Callable[[], Any], flush_l2: bool, calls: int = KERNEL_CALLS) -> CudaProfile:
    """Each of `calls` calls' device time and the kernel table, from CUPTI through torch.profiler."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    from benchmarks.harness.timing import L2Flusher

    device = torch.cuda.current_device()
    if flush_l2:
        flusher: Callable[[], Any] = L2Flusher(torch, device)
    else:  # a one-element write marks the boundary between calls
        flusher = torch.zeros(1, dtype=torch.int32, device=device).zero_
    with profile(activities=[ProfilerActivity.CUDA]) as alone:
        flusher()
        torch.cuda.synchronize()
    alone_activities = kineto_activities(alone)
    boundary = {a.name for a in alone_activities if a.on_device}
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            flusher()
            fn()
        flusher()
        torch.cuda.synchronize()
    activities = kineto_activities(prof)
    split = split_calls(activities, boundary, calls)
    if not split:
        return CudaProfile([], None)
    table = cuda_table(split, host_counts(activities), host_counts(alone_activities))
    return CudaProfile(per_call_seconds(split), table)


def nested_ops(rows: Iterable[tuple[str, int, int, int]]) -> list[CpuOp]:
    """(name, start ns, end ns, thread) of profiled operators as CpuOps, each one's parent the innermost
    operator of its thread whose interval holds it (record_function scopes nest)."""
    ordered = sorted(rows, key=lambda r: (r[3], r[1], -r[2]))
    ops: list[CpuOp] = []
    open_ops: list[tuple[int, int, int]] = []  # (index, end, thread) of the enclosing operators
    for name, start, end, thread in ordered:
        while open_ops and (open_ops[-1][2] != thread or open_ops[-1][1] <= start):
            open_ops.pop()
        ops.append(CpuOp(name, (end - start) / 1e3, open_ops[-1][0] if open_ops else None))
        open_ops.append((len(ops) - 1, end, thread))
    return ops


def profile_cpu(fn: Callable[[], Any], calls: int = CPU_PROFILED_CALLS) -> dict[str, Any] | None:
    """The top-level aten operators of `calls` calls of a CPU case."""
    from torch.profiler import ProfilerActivity, profile, record_function

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(calls):
            with record_function(CALL_MARKER):
                fn()
    # Kineto's raw events: torch's own FunctionEvent tree took 2.1 s for 5 calls of an emulated te.Linear
    # step (7,900 events), these 0.05 s
    rows = (
        (e.name(), e.start_ns(), e.end_ns(), e.start_thread_id())
        for e in prof.profiler.kineto_results.events()
    )
    return cpu_table(nested_ops(rows))

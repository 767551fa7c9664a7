"""Device memory of a GPU case, measured in calls of its own after the timing (which it never disturbs).

From torch's caching allocator (`torch.cuda.memory_allocated` and friends): bytes of live tensors
(allocated) and of the segments torch holds from the driver (reserved). Both are exact counts, not
samples: the same code on the same inputs holds the same bytes, up to the allocator's rounding (512-byte
blocks, 2 MiB segments for small ones and 20 MiB-rounded segments for large ones).

- `setup_allocated_bytes`: what the case holds once its setup is done (inputs, modules, quantizers,
  their workspaces and caches), read before the first timed call.
- `peak_allocated_bytes`, `peak_reserved_bytes`: the highest of each over PEAK_CALLS calls of the timed
  call, peak statistics reset just before them.
- cases that run steps (a forward+backward): the allocated bytes after each of STEPS_MIN..STEPS_MAX steps,
  and from them `leak_bytes_per_step` (the least-squares slope), its standard error and
  `steady_allocated_bytes` (the median of the second half).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

PEAK_CALLS = 3
STEPS_MIN = 8
STEPS_MAX = 24
STEPS_BUDGET_S = 0.25
# what a case prints to stderr (kept in the sidecar's asv-stderr.log): the seconds memory took it
COST_MARKER = "tewatch-memory-seconds: "


@dataclass(frozen=True)
class Slope:
    bytes_per_step: float
    stderr: float  # the slope's standard error from the fit's residuals (0 on a straight line)


def fit_slope(values: Sequence[float]) -> Slope:
    """Least-squares slope of values against step 0, 1, ... and its standard error."""
    n = len(values)
    if n < 3:
        raise ValueError(f"a slope needs 3 or more steps, not {n}")
    steps = range(n)
    slope, intercept = statistics.linear_regression(steps, values)
    residual = sum((v - (intercept + slope * i)) ** 2 for i, v in enumerate(values))
    spread = sum((i - (n - 1) / 2) ** 2 for i in steps)
    return Slope(slope, math.sqrt(residual / (n - 2) / spread))


def step_count(step_seconds: float) -> int:
    """Steps within STEPS_BUDGET_S of the case's median step, between STEPS_MIN and STEPS_MAX."""
    if step_seconds <= 0:
        return STEPS_MAX
    return max(STEPS_MIN, min(STEPS_MAX, int(STEPS_BUDGET_S / step_seconds)))


def held_bytes() -> int:
    import torch

    torch.cuda.synchronize()
    return int(torch.cuda.memory_allocated())


def peaks(fn: Callable[[], Any], calls: int = PEAK_CALLS) -> tuple[int, int]:
    """(peak allocated, peak reserved) bytes over `calls` calls of `fn`."""
    import torch

    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    for _ in range(calls):
        fn()
    torch.cuda.synchronize()
    return int(torch.cuda.max_memory_allocated()), int(torch.cuda.max_memory_reserved())


def allocated_after_steps(step: Callable[[], Any], steps: int) -> list[int]:
    import torch

    after = []
    for _ in range(steps):
        step()
        torch.cuda.synchronize()
        after.append(int(torch.cuda.memory_allocated()))
    return after


def measure(fn: Callable[[], Any], setup_bytes: int, steps: bool, step_seconds: float) -> dict[str, tuple]:
    """metric name -> (value, unit) of the case's memory."""
    peak_allocated, peak_reserved = peaks(fn)
    found: dict[str, tuple] = {
        "setup_allocated_bytes": (setup_bytes, "bytes"),
        "peak_allocated_bytes": (peak_allocated, "bytes"),
        "peak_reserved_bytes": (peak_reserved, "bytes"),
    }
    if steps:
        after = allocated_after_steps(fn, step_count(step_seconds))
        slope = fit_slope(after)
        found["leak_bytes_per_step"] = (slope.bytes_per_step, "bytes/step")
        found["leak_stderr_bytes_per_step"] = (slope.stderr, "bytes/step")
        found["steady_allocated_bytes"] = (statistics.median(after[len(after) // 2 :]), "bytes")
    return found

"""The device's measured matrix-multiply ceilings (TFLOP/s), for the GEMM suite's share-of-ceiling.

Measured in the same process as the case (asv gives every case its own process), on random data,
with the same event timing as the cases.
"""

from __future__ import annotations

from typing import Any

from benchmarks.harness.timing import TimingPlan, measure

_PLAN = TimingPlan(budget_s=0.1, min_samples=10, max_samples=30, flush_l2=False)


def _tflops(m: int, n: int, k: int, seconds: float) -> float:
    return 2.0 * m * n * k / seconds / 1e12


def measured_ceiling(kind: str, device: str) -> float | None:
    """Dense TFLOP/s for kind in {bf16, fp8, fp32}; None where the device has no such unit."""
    import torch

    if device == "cpu":
        size = 512
        a, b = torch.randn(size, size), torch.randn(size, size)
        return _tflops(size, size, size, measure(lambda: a @ b, "cpu", _PLAN).median)
    size = 8192 if kind != "fp32" else 4096
    if kind == "bf16":
        a = torch.randn(size, size, dtype=torch.bfloat16, device="cuda")
        b = torch.randn(size, size, dtype=torch.bfloat16, device="cuda")
        fn: Any = lambda: a @ b  # noqa: E731
    elif kind == "fp8":
        if torch.cuda.get_device_capability() < (8, 9):
            return None
        a = torch.randn(size, size, device="cuda").to(torch.float8_e4m3fn)
        b = torch.randn(size, size, device="cuda").to(torch.float8_e4m3fn).t()
        one = torch.ones((), device="cuda")
        fn = lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)  # noqa: E731
    elif kind == "fp32":
        previous = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = False
        a = torch.randn(size, size, device="cuda")
        b = torch.randn(size, size, device="cuda")
        fn = lambda: a @ b  # noqa: E731
        try:
            return _tflops(size, size, size, measure(fn, "cuda", _PLAN).median)
        finally:
            torch.backends.cuda.matmul.allow_tf32 = previous
    else:
        return None
    return _tflops(size, size, size, measure(fn, "cuda", _PLAN).median)

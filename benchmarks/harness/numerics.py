"""Error metrics shared by the suites' checks."""

from __future__ import annotations

from typing import Any


def relative_error(actual: Any, expected: Any) -> float:
    """||actual - expected|| / ||expected|| in float64 (the METHOD's normwise error); NaN stays NaN."""
    a = actual.detach().double()
    e = expected.detach().double()
    denom = e.norm().item()
    diff = (a - e).norm().item()
    return diff / denom if denom else diff


def max_abs_difference(actual: Any, expected: Any) -> float:
    """The largest |a - e| in float64; NaN where either side has one in a different place."""
    import torch

    a = actual.detach().double()
    e = expected.detach().double()
    if a.shape != e.shape:
        raise ValueError(f"shapes differ: {tuple(a.shape)} vs {tuple(e.shape)}")
    if a.numel() == 0:
        return 0.0
    nan_a, nan_e = torch.isnan(a), torch.isnan(e)
    if not torch.equal(nan_a, nan_e):
        return float("nan")
    both = ~nan_a
    return (a[both] - e[both]).abs().max().item() if both.any() else 0.0


def bytes_equal(a: Any, b: Any) -> bool:
    import torch

    if a.shape != b.shape:
        return False
    return torch.equal(a.contiguous().view(torch.uint8), b.contiguous().view(torch.uint8))


class NoBuffers(ValueError):
    """Two sides with no buffer at all: a comparison of nothing, which must not pass."""


def differing_buffers(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """Names of the buffers that one side lacks or whose bytes differ; NoBuffers when neither side has
    any."""
    if not before and not after:
        raise NoBuffers("no buffers to compare on either side")
    return sorted(
        n
        for n in set(before) | set(after)
        if n not in before or n not in after or not bytes_equal(before[n], after[n])
    )


# SQNR of a result equal to its reference (no noise at all): a float64 norm resolves about 313 dB
SQNR_EQUAL_DB = 300.0


def error_metrics(actual: Any, expected: Any) -> dict[str, float]:
    """max-abs, relative L2 and SQNR (dB) of `actual` against `expected`, in float64; NaN where either side
    has a NaN the other lacks (JSON keeps no NaN: the record drops such a metric and says so)."""
    import math

    max_abs = max_abs_difference(actual, expected)
    a = actual.detach().double().reshape(expected.shape)
    e = expected.detach().double()
    signal = e.norm().item()
    noise = (a - e).norm().item()
    rel_l2 = noise / signal if signal else noise
    if noise == 0:
        sqnr = SQNR_EQUAL_DB
    elif signal == 0 or not math.isfinite(noise):
        sqnr = float("nan")
    else:
        sqnr = min(20 * math.log10(signal / noise), SQNR_EQUAL_DB)
    return {"max_abs": max_abs, "rel_l2": rel_l2, "sqnr_db": sqnr}


# E4M3's largest finite value and smallest normal one: NVFP4's block scales are E4M3
E4M3_MAX = 448.0
E4M3_MIN_NORMAL = 2.0**-6


def scale_health(scales: Any) -> dict[str, float]:
    """Shares of block scales that saturate (E4M3's largest value), underflow (subnormal: 0 < s < 2^-6,
    fewer significant bits) or are zero (a block quantized to nothing): NVFP4's E4M3 block scales, in any
    float dtype or as E4M3 bytes."""
    import torch

    if scales.dtype == torch.uint8:
        scales = scales.view(torch.float8_e4m3fn)
    s = scales.detach().float().abs().reshape(-1)
    n = max(s.numel(), 1)
    return {
        "scale_saturated_share": (s >= E4M3_MAX).sum().item() / n,
        "scale_subnormal_share": ((s > 0) & (s < E4M3_MIN_NORMAL)).sum().item() / n,
        "scale_zero_share": (s == 0).sum().item() / n,
    }

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


def differing_buffers(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """Names of the buffers that one side lacks or whose bytes differ."""
    return sorted(
        n
        for n in set(before) | set(after)
        if n not in before or n not in after or not bytes_equal(before[n], after[n])
    )

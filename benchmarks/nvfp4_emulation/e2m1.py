"""FP4 E2M1: the value grid, rounding to 4-bit codes, and packing two codes per byte.

A code is ``sign << 3 | magnitude_index``, where ``magnitude_index`` indexes ``E2M1_VALUES``.
Packed bytes hold element ``2i`` in the low nibble and element ``2i + 1`` in the high nibble, the layout
of Transformer Engine's NVFP4 data.
"""

from __future__ import annotations

import functools

import torch

E2M1_MAX = 6.0
E2M1_VALUES = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0], dtype=torch.float32)
"""The 8 non-negative E2M1 magnitudes, in code order."""

_CODE_VALUES = torch.cat([E2M1_VALUES, -E2M1_VALUES])  # codes 8..15 are the negatives, 8 is -0.0

# Round-to-nearest, ties to even code, expressed as bucket boundaries over |x|: a value equal to a
# boundary falls in the lower bucket (torch.bucketize, right=False). The ties that must go up
# (0.75 -> 1.0, 1.75 -> 2.0, 3.5 -> 4.0) use the float32 just below the midpoint instead.
_RN_BOUNDARIES = torch.tensor(
    [
        0.25,
        torch.nextafter(torch.tensor(0.75), torch.tensor(0.0)).item(),
        1.25,
        torch.nextafter(torch.tensor(1.75), torch.tensor(0.0)).item(),
        2.5,
        torch.nextafter(torch.tensor(3.5), torch.tensor(0.0)).item(),
        5.0,
    ],
    dtype=torch.float32,
)

_TABLES = {"values": E2M1_VALUES, "code_values": _CODE_VALUES, "rn_boundaries": _RN_BOUNDARIES}


@functools.cache
def _table(name: str, device: torch.device) -> torch.Tensor:
    """A constant table on ``device``, copied there once rather than on every call."""
    return _TABLES[name].to(device)


def round_to_e2m1_codes(x: torch.Tensor) -> torch.Tensor:
    """Codes of float32 values already clipped to [-6, 6], rounded to nearest with ties to even.

    Semantics follow Transformer Engine's reference cast: a negative value that rounds to zero keeps
    its sign (code 8, -0.0); -0.0 itself and NaN become code 0.
    """
    if x.dtype != torch.float32:
        raise TypeError(f"E2M1 rounding expects float32 input, got {x.dtype}")
    boundaries = _table("rn_boundaries", x.device)
    magnitude = torch.bucketize(x.abs(), boundaries, right=False, out_int32=True).to(torch.uint8)
    magnitude.masked_fill_(x.isnan(), 0)
    return _with_sign(magnitude, x)


def stochastic_round_to_e2m1_codes(x: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
    """Codes of float32 values in [-6, 6], rounded up in magnitude with probability equal to the
    distance from the lower grid value divided by the grid step (unbiased); values on the grid stay.

    Uniform draws come from ``generator`` (or the default generator of ``x``'s device).
    """
    if x.dtype != torch.float32:
        raise TypeError(f"E2M1 rounding expects float32 input, got {x.dtype}")
    grid = _table("values", x.device)
    magnitude = torch.nan_to_num(x.abs(), nan=0.0)
    lower = torch.bucketize(magnitude, grid[1:], right=True, out_int32=True)  # index of grid <= |x|
    upper = (lower + 1).clamp_(max=grid.numel() - 1)
    lower_value = grid[lower]
    step = grid[upper] - lower_value
    p_up = torch.where(step > 0, (magnitude - lower_value) / step, 0.0)
    draws = torch.rand(x.shape, generator=generator, device=x.device, dtype=torch.float32)
    magnitude_code = (lower + (draws < p_up)).to(torch.uint8)
    return _with_sign(magnitude_code, x)


def _with_sign(magnitude_code: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    return magnitude_code | ((x < 0).to(torch.uint8) << 3)


def pack_e2m1_codes(codes: torch.Tensor) -> torch.Tensor:
    """Pack codes (..., K) with K even into bytes (..., K/2): element 2i low nibble, 2i+1 high."""
    if codes.shape[-1] % 2:
        raise ValueError(f"cannot pack an odd number of E2M1 codes along the last dim: {codes.shape}")
    pairs = codes.reshape(*codes.shape[:-1], codes.shape[-1] // 2, 2)
    return pairs[..., 0] | (pairs[..., 1] << 4)


def unpack_e2m1_codes(data: torch.Tensor) -> torch.Tensor:
    """Inverse of ``pack_e2m1_codes``: bytes (..., K/2) to codes (..., K)."""
    if data.dtype != torch.uint8:
        raise TypeError(f"packed E2M1 data must be uint8, got {data.dtype}")
    codes = torch.stack([data & 0x0F, data >> 4], dim=-1)
    return codes.reshape(*data.shape[:-1], data.shape[-1] * 2)


def e2m1_codes_to_float(codes: torch.Tensor) -> torch.Tensor:
    """float32 value of each code (code 8 is -0.0)."""
    return _table("code_values", codes.device)[codes.long()]

"""FP4 E2M1: the value grid, rounding to 4-bit codes, and packing two codes per byte.

A code is ``sign << 3 | magnitude_index``, where ``magnitude_index`` indexes ``E2M1_VALUES``.
Packed bytes hold element ``2i`` in the low nibble and element ``2i + 1`` in the high nibble, the layout
of Transformer Engine's NVFP4 data.

The grid has three binades of two codes each (plus zero and 0.5): step 0.5 below 2, step 1 in [2, 4),
step 2 in [4, 6]. In binade ``b`` the magnitude code is ``|x| / step + 2b``, so rounding is one float
``round`` (half to even, which is also the even code). Everything stays in float32 arithmetic, which
is fast on CPU and GPU alike.
"""

from __future__ import annotations

import functools

import torch

E2M1_MAX = 6.0
E2M1_VALUES = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0], dtype=torch.float32)
"""The 8 non-negative E2M1 magnitudes, in code order."""

_CODE_VALUES = torch.cat([E2M1_VALUES, -E2M1_VALUES])  # codes 8..15 are the negatives, 8 is -0.0


@functools.cache
def _code_values(device: torch.device) -> torch.Tensor:
    """The 16 code values on ``device``, copied there once rather than on every call."""
    return _CODE_VALUES.to(device)


def _check_float32(x: torch.Tensor) -> None:
    if x.dtype != torch.float32:
        raise TypeError(f"E2M1 rounding expects float32 input, got {x.dtype}")


def _grid_position(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """For float32 ``x``: (``|x| / step``, ``2b`` for the binade b, 1.0 where the code takes the sign
    bit). Magnitudes saturate at 6; NaN and -0.0 are treated as +0, as in TE's reference cast."""
    x = torch.nan_to_num(x, nan=0.0)
    magnitude = x.abs().clamp_(max=E2M1_MAX)
    in_binade_1_or_2 = torch.floor(magnitude * 0.5).clamp_(0.0, 1.0)  # |x| >= 2
    in_binade_2 = torch.floor(magnitude * 0.25).clamp_(0.0, 1.0)  # |x| >= 4
    inverse_step = 2.0 - in_binade_1_or_2 - 0.5 * in_binade_2  # 2, 1 or 0.5 (exact powers of two)
    code_offset = 2.0 * (in_binade_1_or_2 + in_binade_2)
    negative = torch.ceil(-x).clamp_(0.0, 1.0)  # 1 for x < 0, 0 for x >= 0 and for -0.0
    return magnitude * inverse_step, code_offset, negative


def _to_codes(magnitude_code: torch.Tensor, negative: torch.Tensor) -> torch.Tensor:
    return (magnitude_code + 8.0 * negative).to(torch.int32).to(torch.uint8)


def round_to_e2m1_codes(x: torch.Tensor) -> torch.Tensor:
    """Codes of float32 values, rounded to nearest with ties to even, saturating at +-6.

    Semantics follow Transformer Engine's reference cast: a negative value that rounds to zero keeps
    its sign (code 8, -0.0); -0.0 itself and NaN become code 0.
    """
    _check_float32(x)
    in_steps, code_offset, negative = _grid_position(x)
    return _to_codes(torch.round(in_steps) + code_offset, negative)


def stochastic_round_to_e2m1_codes(x: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
    """Codes of float32 values (saturating at +-6), rounded up in magnitude with probability equal to the
    distance from the lower grid value divided by the grid step (unbiased); values on the grid stay.

    Uniform draws come from ``generator`` (or the default generator of ``x``'s device).
    """
    _check_float32(x)
    in_steps, code_offset, negative = _grid_position(x)
    lower = torch.floor(in_steps)
    draws = torch.rand(x.shape, generator=generator, device=x.device, dtype=torch.float32)
    # the sign of (fraction - draw) is exact, so this is 1 with probability `fraction`, never on the grid
    round_up = torch.ceil((in_steps - lower) - draws).clamp_(min=0.0)
    return _to_codes(lower + round_up + code_offset, negative)


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
    flat = torch.index_select(_code_values(codes.device), 0, codes.reshape(-1).to(torch.int32))
    return flat.view(codes.shape)

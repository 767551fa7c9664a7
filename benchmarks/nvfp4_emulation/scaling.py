"""NVFP4's two-level scaling: a float32 per-tensor scale from the global amax, and an FP8 E4M3 scale per
block of 16 values (or per 16x16 tile), computed in float32 in the same order as Transformer Engine's
reference quantizer so that the E4M3 rounding and the encode scale match bit for bit.

decode: ``x ~= e2m1 * block_scale_e4m3 * global_amax / (6 * 448)``.
"""

from __future__ import annotations

import torch

from .e2m1 import E2M1_MAX

E4M3_MAX = 448.0
FP32_MAX = torch.finfo(torch.float32).max
GLOBAL_SCALE_NUMERATOR = E4M3_MAX * E2M1_MAX  # 2688, exact in float32
RECIPROCAL_E2M1_MAX = torch.tensor(1.0 / E2M1_MAX, dtype=torch.float32).item()  # float32(1/6)
GLOBAL_DECODE_FACTOR = torch.tensor(1.0 / GLOBAL_SCALE_NUMERATOR, dtype=torch.float32).item()  # f32(1/2688)


def exact_div(numerator: torch.Tensor | float, denominator: torch.Tensor | float) -> torch.Tensor:
    """float32 ``numerator / denominator`` correctly rounded on every backend: divided in float64, then
    rounded to float32, which is exact for a quotient (53 >= 2 * 24 + 2 bits). Triton's float32 division,
    which torch.compile emits on GPUs, may be 2 ulp off (div.full.f32); one ulp of an encode scale moves
    block scales across E4M3 rounding boundaries, and compiled torch-ref would differ from eager."""

    def wide(value: torch.Tensor | float) -> torch.Tensor | float:
        return value.to(torch.float64) if isinstance(value, torch.Tensor) else float(value)

    return torch.div(wide(numerator), wide(denominator)).to(torch.float32)


def global_encode_scale(global_amax: torch.Tensor) -> torch.Tensor:
    """``2688 / amax`` in float32, capped at float32 max (amax 0) and replaced by 1 when it is 0."""
    scale = exact_div(GLOBAL_SCALE_NUMERATOR, global_amax.to(torch.float32)).clamp_(max=FP32_MAX)
    return torch.where(scale == 0.0, 1.0, scale)


def block_decode_scales(block_amax: torch.Tensor, encode_scale: torch.Tensor) -> torch.Tensor:
    """E4M3 decode scale of each block: ``block_amax * (global_encode_scale * float32(1/6))``,
    saturated to +-448 and rounded to nearest-even E4M3."""
    multiplier = encode_scale * RECIPROCAL_E2M1_MAX
    scale = (block_amax.to(torch.float32) * multiplier).clamp_(min=-E4M3_MAX, max=E4M3_MAX)
    return scale.to(torch.float8_e4m3fn)


def block_encode_scales(decode_scales: torch.Tensor, encode_scale: torch.Tensor) -> torch.Tensor:
    """float32 factor that maps a block onto the E2M1 grid: ``1 / (decode_e4m3 * (1 / global_encode))``,
    capped at float32 max (a zero block scale gives the cap; its values still decode to zero)."""
    global_decode = exact_div(1.0, encode_scale)
    return exact_div(1.0, decode_scales.to(torch.float32) * global_decode).clamp_(max=FP32_MAX)


def dequantize_factors(decode_scales: torch.Tensor, global_amax: torch.Tensor) -> torch.Tensor:
    """Per-block float32 factor for decoding, ``(scale_e4m3 * amax) * float32(1/2688)``: the order of
    Transformer Engine's NVFP4 dequantize kernel."""
    return decode_scales.to(torch.float32) * global_amax.to(torch.float32) * GLOBAL_DECODE_FACTOR

"""NVFP4 quantize and dequantize along the last dimension, following Transformer Engine's
``NVFP4QuantizerRef`` (1x16 blocks or 16x16 tiles, post-RHT amax for the column-wise operand)."""

from __future__ import annotations

import dataclasses

import torch

from .e2m1 import (
    E2M1_MAX,
    e2m1_codes_to_float,
    pack_e2m1_codes,
    round_to_e2m1_codes,
    stochastic_round_to_e2m1_codes,
    unpack_e2m1_codes,
)
from .hadamard import Signs, apply_rht
from .scaling import block_decode_scales, block_encode_scales, dequantize_factors, global_encode_scale
from .tensor import BLOCK_SIZE, NVFP4Emulated

SUPPORTED_INPUT_DTYPES = (torch.float32, torch.bfloat16, torch.float16)


def _check_input(x: torch.Tensor, block_2d: bool) -> None:
    if x.dtype not in SUPPORTED_INPUT_DTYPES:
        raise TypeError(f"NVFP4 quantize expects one of {SUPPORTED_INPUT_DTYPES}, got {x.dtype}")
    if x.ndim == 0 or x.numel() == 0:
        raise ValueError(
            f"NVFP4 quantize needs a non-empty tensor with at least one dim, got {tuple(x.shape)}"
        )
    if x.shape[-1] % BLOCK_SIZE:
        raise ValueError(f"the last dimension must be a multiple of {BLOCK_SIZE}, got shape {tuple(x.shape)}")
    rows = x.numel() // x.shape[-1]
    if block_2d and rows % BLOCK_SIZE:
        raise ValueError(
            f"16x16 blocks need the flattened leading dims to be a multiple of {BLOCK_SIZE}, "
            f"got {rows} rows from shape {tuple(x.shape)}"
        )


def _block_amax(x2d: torch.Tensor, block_2d: bool) -> torch.Tensor:
    """amax per (row, 16-column block), shape (M, K/16); with ``block_2d`` each 16x16 tile's amax is
    repeated on its 16 rows."""
    m, k = x2d.shape
    if not block_2d:
        return x2d.view(m, k // BLOCK_SIZE, BLOCK_SIZE).abs().amax(dim=-1)
    tiles = x2d.view(m // BLOCK_SIZE, BLOCK_SIZE, k // BLOCK_SIZE, BLOCK_SIZE).abs().amax(dim=(1, 3))
    return tiles[:, None, :].expand(-1, BLOCK_SIZE, -1).reshape(m, k // BLOCK_SIZE)


def _quantize_rows(
    x2d: torch.Tensor,
    block_2d: bool,
    stochastic_rounding: bool,
    generator: torch.Generator | None,
    global_amax: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    m, k = x2d.shape
    if global_amax is None:
        global_amax = x2d.abs().amax()
    elif global_amax.numel() != 1:
        raise ValueError(f"global_amax must hold one value, got shape {tuple(global_amax.shape)}")
    global_amax = global_amax.to(device=x2d.device, dtype=torch.float32).reshape(1)
    encode_scale = global_encode_scale(global_amax)
    decode_scales = block_decode_scales(_block_amax(x2d, block_2d), encode_scale)
    encode_per_block = block_encode_scales(decode_scales, encode_scale)
    blocks = x2d.view(m, k // BLOCK_SIZE, BLOCK_SIZE).to(torch.float32)
    scaled = (blocks * encode_per_block[..., None]).clamp_(min=-E2M1_MAX, max=E2M1_MAX).view(m, k)
    if stochastic_rounding:
        codes = stochastic_round_to_e2m1_codes(scaled, generator)
    else:
        codes = round_to_e2m1_codes(scaled)
    return pack_e2m1_codes(codes), decode_scales, global_amax


def quantize_nvfp4(
    x: torch.Tensor,
    *,
    block_2d: bool = False,
    stochastic_rounding: bool = False,
    generator: torch.Generator | None = None,
    rht: bool = False,
    rht_signs: Signs | None = None,
    global_amax: torch.Tensor | None = None,
) -> NVFP4Emulated:
    """Quantize ``x`` (any rank, leading dims flattened) to NVFP4 along its last dimension.

    ``block_2d``: one scale per 16x16 tile (TE's weight quantization). ``stochastic_rounding``: unbiased
    random rounding with ``generator``. ``rht``: apply the RHT (``rht_signs``, default TE's) along the
    last dimension first; the global amax is then that of the transformed values. ``global_amax``: use
    this amax instead of the tensor's own (TE's amax reduction over a tensor-parallel group).
    """
    _check_input(x, block_2d)
    if rht:
        x = apply_rht(x, rht_signs)
    x2d = x.contiguous().view(-1, x.shape[-1])
    data, scales, global_amax = _quantize_rows(x2d, block_2d, stochastic_rounding, generator, global_amax)
    return NVFP4Emulated(
        data=data.view(*x.shape[:-1], x.shape[-1] // 2),
        scales=scales,
        global_amax=global_amax,
        shape=x.shape,
        block_2d=block_2d,
        stochastic_rounding=stochastic_rounding,
        rht=rht,
    )


def quantize_nvfp4_columnwise(
    x: torch.Tensor,
    *,
    block_2d: bool = False,
    stochastic_rounding: bool = False,
    generator: torch.Generator | None = None,
    rht: bool = False,
    rht_signs: Signs | None = None,
    global_amax: torch.Tensor | None = None,
) -> NVFP4Emulated:
    """The column-wise operand: ``x`` viewed as (M, K), transposed to (K, M), optionally RHT'd along M,
    then quantized along M. Data (K, M/2), scales (K, M/16), amax of the (transformed) transpose."""
    if x.ndim == 0 or x.numel() == 0:
        raise ValueError(
            f"NVFP4 quantize needs a non-empty tensor with at least one dim, got {tuple(x.shape)}"
        )
    transposed = x.reshape(-1, x.shape[-1]).t().contiguous()
    q = quantize_nvfp4(
        transposed,
        block_2d=block_2d,
        stochastic_rounding=stochastic_rounding,
        generator=generator,
        rht=rht,
        rht_signs=rht_signs,
        global_amax=global_amax,
    )
    return dataclasses.replace(q, columnwise=True)


def dequantize_nvfp4(q: NVFP4Emulated, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Decode to ``dtype`` with shape ``q.shape``: ``e2m1 * ((scale * amax) * float32(1/2688))`` in
    float32, then one cast (TE's dequantize kernel). Column-wise or RHT data decodes to the transposed
    or transformed values; undo the RHT with ``apply_rht(..., inverse=True)``."""
    values = e2m1_codes_to_float(unpack_e2m1_codes(q.data.reshape(q.rows, q.cols // 2)))
    factors = dequantize_factors(q.scales, q.global_amax)
    blocks = values.view(q.rows, q.cols // BLOCK_SIZE, BLOCK_SIZE) * factors[..., None]
    return blocks.to(dtype).view(q.shape)

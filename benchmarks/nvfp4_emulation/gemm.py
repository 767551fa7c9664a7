"""Emulated NVFP4 GEMM, ``a @ b.T``, rounded like Transformer Engine's reference ``qgemm``.

TE's reference (modelled on the FP4 tensor cores) accumulates in float32 one 16-wide K block at a
time: ``y += outer(sa[:, k], sb[:, k]) * (a_k @ b_k.T)``, then applies
``alpha = amax_a * amax_b / (6 * 6 * 448 * 448)`` and casts. Each block term is exact in float32 (E2M1
products are multiples of 1/4 below 576, times a product of two E4M3 scales), so folding the block
scales into the operands first gives the same terms; only the sequential sum over K blocks rounds,
and that order is kept.
"""

from __future__ import annotations

import torch

from .e2m1 import E2M1_MAX, e2m1_codes_to_float, unpack_e2m1_codes
from .scaling import E4M3_MAX
from .tensor import BLOCK_SIZE, NVFP4Emulated

ALPHA_DENOMINATOR = E2M1_MAX * E2M1_MAX * E4M3_MAX * E4M3_MAX  # 7225344, exact in float32


def _scaled_operand(q: NVFP4Emulated) -> torch.Tensor:
    """(M, K) float32: each E2M1 value times its block's E4M3 scale (exact)."""
    values = e2m1_codes_to_float(unpack_e2m1_codes(q.data.reshape(q.rows, q.cols // 2)))
    blocks = values.view(q.rows, q.cols // BLOCK_SIZE, BLOCK_SIZE) * q.scales.to(torch.float32)[..., None]
    return blocks.view(q.rows, q.cols)


def gemm_nvfp4(a: NVFP4Emulated, b: NVFP4Emulated, out_dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """``a @ b.T`` for a of logical shape (*lead, K) and b of (N, K) (b's leading dims are flattened
    into N). Returns (*lead, N) in ``out_dtype``."""
    if a.cols != b.cols:
        raise ValueError(f"K mismatch: a is {tuple(a.shape)}, b is {tuple(b.shape)}")
    if a.device != b.device:
        raise ValueError(f"operands on different devices: {a.device} and {b.device}")
    a_scaled = _scaled_operand(a)
    b_scaled_t = _scaled_operand(b).t()
    out = torch.zeros(a.rows, b.rows, dtype=torch.float32, device=a.device)
    block_product = torch.empty_like(out)
    for start in range(0, a.cols, BLOCK_SIZE):
        torch.mm(
            a_scaled[:, start : start + BLOCK_SIZE], b_scaled_t[start : start + BLOCK_SIZE], out=block_product
        )
        out += block_product
    alpha = torch.div((a.global_amax * b.global_amax).squeeze(-1), ALPHA_DENOMINATOR)
    return (alpha * out).to(out_dtype).view(*a.shape[:-1], b.rows)

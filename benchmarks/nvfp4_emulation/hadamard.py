"""The random Hadamard transform (RHT) NVFP4 applies to the column-wise (wgrad) operand.

Each block of 16 consecutive values along the last dimension is multiplied by
``diag(signs) @ H16 / 4``, where ``H16`` is the Sylvester Hadamard matrix. The matrix is orthonormal,
so the transform keeps norms and its inverse is its transpose.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import torch

RHT_SIZE = 16

DEFAULT_RHT_SIGNS: tuple[float, ...] = (
    1.0, 1.0, 1.0, -1.0, 1.0, -1.0, -1.0, -1.0, -1.0, -1.0, -1.0, 1.0, -1.0, 1.0, -1.0, -1.0,
)  # fmt: skip
"""Transformer Engine's hard-coded sign vector (``with_random_sign_mask=True``, its default)."""

Signs = torch.Tensor | Sequence[float]


def default_rht_signs(device: torch.device | str | None = None) -> torch.Tensor:
    """Transformer Engine's default RHT sign vector as a float32 tensor of 16 +-1."""
    return torch.tensor(DEFAULT_RHT_SIGNS, dtype=torch.float32, device=device)


def hadamard_matrix(size: int = RHT_SIZE) -> torch.Tensor:
    """Unnormalised Sylvester Hadamard matrix of +-1: ``H[i, j] = (-1) ** popcount(i & j)``."""
    if size < 1 or size & (size - 1):
        raise ValueError(f"Hadamard size must be a power of two, got {size}")
    index = torch.arange(size)
    overlap = index[:, None] & index[None, :]
    parity = torch.zeros_like(overlap)
    while bool(overlap.any()):
        parity ^= overlap & 1
        overlap = overlap >> 1
    return (1 - 2 * parity).to(torch.float32)


def _signs_key(signs: Signs | None) -> tuple[float, ...]:
    if signs is None:
        return DEFAULT_RHT_SIGNS
    values = signs.detach().cpu().tolist() if isinstance(signs, torch.Tensor) else list(signs)
    if len(values) != RHT_SIZE or any(v not in (1.0, -1.0) for v in values):
        raise ValueError(f"RHT signs must be {RHT_SIZE} values of +1 or -1, got {values}")
    return tuple(float(v) for v in values)


@functools.cache
def _cached_rht_matrix(signs: tuple[float, ...], dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    signed = torch.tensor(signs, dtype=torch.float32)[:, None] * hadamard_matrix(RHT_SIZE)
    # Built in float32, cast, then scaled by 1/4 in the target dtype: all entries stay exact.
    return (signed.to(dtype) * (1.0 / RHT_SIZE**0.5)).to(device)


def rht_matrix(
    signs: Signs | None = None,
    dtype: torch.dtype = torch.float32,
    device: torch.device | str | None = None,
) -> torch.Tensor:
    """The 16x16 normalised RHT matrix ``diag(signs) @ H16 / 4`` (signs default to TE's vector).

    Cached per (signs, dtype, device); passing signs as a tuple avoids a device-to-host copy.
    """
    return _cached_rht_matrix(_signs_key(signs), dtype, torch.device(device or "cpu"))


def apply_rht(x: torch.Tensor, signs: Signs | None = None, *, inverse: bool = False) -> torch.Tensor:
    """Transform each block of 16 along the last dimension: ``block @ rht_matrix(signs)``.

    The product runs in ``x.dtype`` (bf16 in, bf16 out), as in Transformer Engine's reference.
    ``inverse=True`` multiplies by the transpose, undoing the transform.
    """
    if x.ndim == 0 or x.shape[-1] % RHT_SIZE:
        raise ValueError(
            f"RHT needs the last dimension to be a multiple of {RHT_SIZE}, got shape {tuple(x.shape)}"
        )
    if not x.is_floating_point():
        raise TypeError(f"RHT expects a floating point tensor, got {x.dtype}")
    matrix = rht_matrix(signs, x.dtype, x.device)
    if inverse:
        matrix = matrix.t()
    return (x.contiguous().view(-1, RHT_SIZE) @ matrix).view(x.shape)

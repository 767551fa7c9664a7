"""The container for an emulated NVFP4 tensor, laid out like Transformer Engine's NVFP4 storage."""

from __future__ import annotations

import dataclasses
import math

import torch

BLOCK_SIZE = 16


@dataclasses.dataclass(frozen=True)
class NVFP4Emulated:
    """One direction (row-wise or column-wise) of an NVFP4-quantized tensor.

    ``data``: uint8 ``(*lead, K/2)``, two E2M1 codes per byte, element ``2i`` in the low nibble.
    ``scales``: float8_e4m3fn ``(M, K/16)`` with ``M = prod(lead)``: one decode scale per 16 values of
    a row; with ``block_2d`` the scale of each 16x16 tile is repeated on its 16 rows. No padding and
    no GEMM swizzle (compare with the first ``(M, K/16)`` of Transformer Engine's ``scale_inv``).
    ``global_amax``: float32 ``(1,)``, the amax of the quantized values (after the RHT when ``rht``).
    ``shape``: the logical shape ``(*lead, K)``; column-wise it is ``(K_in, M_in)`` of the input.
    """

    data: torch.Tensor
    scales: torch.Tensor
    global_amax: torch.Tensor
    shape: torch.Size
    block_2d: bool = False
    stochastic_rounding: bool = False
    rht: bool = False
    columnwise: bool = False

    def __post_init__(self) -> None:
        if self.data.dtype != torch.uint8:
            raise TypeError(f"NVFP4 data must be uint8, got {self.data.dtype}")
        if self.scales.dtype != torch.float8_e4m3fn:
            raise TypeError(f"NVFP4 scales must be float8_e4m3fn, got {self.scales.dtype}")
        if len(self.shape) == 0 or self.shape[-1] % BLOCK_SIZE:
            raise ValueError(f"NVFP4 shape needs a last dimension divisible by {BLOCK_SIZE}: {self.shape}")
        if tuple(self.data.shape) != (*self.shape[:-1], self.shape[-1] // 2):
            raise ValueError(f"data shape {tuple(self.data.shape)} does not fit logical shape {self.shape}")
        if tuple(self.scales.shape) != (self.rows, self.cols // BLOCK_SIZE):
            raise ValueError(
                f"scales shape {tuple(self.scales.shape)} does not fit logical shape {self.shape}"
            )
        if self.global_amax.shape != (1,) or self.global_amax.dtype != torch.float32:
            raise ValueError("global_amax must be a float32 tensor of shape (1,)")

    @property
    def rows(self) -> int:
        """M: the product of the leading dimensions."""
        return math.prod(self.shape[:-1])

    @property
    def cols(self) -> int:
        """K: the quantized (last) dimension."""
        return self.shape[-1]

    @property
    def device(self) -> torch.device:
        return self.data.device

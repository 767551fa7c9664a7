"""A Linear layer whose three GEMMs run through the project's NVFP4 emulation (torch-ref backend).

Mirrors NVFP4BlockScaling's roles: forward input 1x16 blocks, weight 16x16 blocks, and for wgrad the
RHT on both operands along the token dimension. Stochastic rounding is off so that compiled and eager
runs can be compared bit for bit (TE's own compile test disables it too).
"""

from __future__ import annotations

import math

import torch

from benchmarks.nvfp4_emulation import gemm_nvfp4, quantize_nvfp4, quantize_nvfp4_columnwise


class _EmulatedNVFP4Linear(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x, weight)
        x_q = quantize_nvfp4(x)
        w_q = quantize_nvfp4(weight, block_2d=True)
        return gemm_nvfp4(x_q, w_q, out_dtype=x.dtype)

    @staticmethod
    def backward(ctx, grad_out: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x, weight = ctx.saved_tensors
        k = x.shape[-1]
        dy2d = grad_out.reshape(-1, grad_out.shape[-1])
        # dgrad: dy (M, N) @ w (N, K); w's column-wise operand is (K, N)
        dgrad = gemm_nvfp4(
            quantize_nvfp4(dy2d), quantize_nvfp4_columnwise(weight, block_2d=True), out_dtype=x.dtype
        )
        # wgrad: dy^T (N, M) @ x (M, K); both column-wise along the tokens, with the RHT
        wgrad = gemm_nvfp4(
            quantize_nvfp4_columnwise(dy2d, rht=True),
            quantize_nvfp4_columnwise(x.reshape(-1, k), rht=True),
            out_dtype=weight.dtype,
        )
        return dgrad.view(x.shape), wgrad


class EmulatedNVFP4Linear(torch.nn.Module):
    def __init__(self, in_features: int, out_features: int, device: str, dtype: torch.dtype) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.empty(out_features, in_features, device=device, dtype=dtype))
        torch.nn.init.kaiming_uniform_(self.weight, a=math.sqrt(5))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _EmulatedNVFP4Linear.apply(x, self.weight)


class EmulatedNVFP4LayerNormMLP(torch.nn.Module):
    """te.LayerNormMLP's shape through the emulation: LayerNorm, fc1, GELU, fc2 (no biases). The norm
    computes in float32 with float32 weights, as TE's kernel does."""

    def __init__(self, hidden: int, ffn_hidden: int, device: str, dtype: torch.dtype) -> None:
        super().__init__()
        self.layer_norm = torch.nn.LayerNorm(hidden, device=device, dtype=torch.float32)
        self.fc1 = EmulatedNVFP4Linear(hidden, ffn_hidden, device=device, dtype=dtype)
        self.fc2 = EmulatedNVFP4Linear(ffn_hidden, hidden, device=device, dtype=dtype)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.nn.functional.gelu(self.fc1(self.layer_norm(x.float()).to(x.dtype))))

"""NVFP4 emulated in plain PyTorch: the project's own oracle for Transformer Engine's NVFP4 path.

E2M1 values with an FP8 E4M3 scale per 16 values (or per 16x16 tile) and a float32 per-tensor scale,
the 16x16 random Hadamard transform, stochastic rounding, dequantize and the emulated GEMM. It follows
the semantics of TE's ``NVFP4QuantizerRef`` so that data, scales and amax compare bit for bit (except
stochastic rounding, whose random draws differ). Runs on CPU and CUDA tensors; imports only torch.
"""

from .e2m1 import E2M1_MAX, E2M1_VALUES, pack_e2m1_codes, unpack_e2m1_codes
from .gemm import gemm_nvfp4
from .hadamard import DEFAULT_RHT_SIGNS, apply_rht, default_rht_signs, hadamard_matrix, rht_matrix
from .quantize import dequantize_nvfp4, quantize_nvfp4, quantize_nvfp4_columnwise
from .scaling import E4M3_MAX
from .tensor import BLOCK_SIZE, NVFP4Emulated

__all__ = [
    "BLOCK_SIZE",
    "DEFAULT_RHT_SIGNS",
    "E2M1_MAX",
    "E2M1_VALUES",
    "E4M3_MAX",
    "NVFP4Emulated",
    "apply_rht",
    "default_rht_signs",
    "dequantize_nvfp4",
    "gemm_nvfp4",
    "hadamard_matrix",
    "pack_e2m1_codes",
    "quantize_nvfp4",
    "quantize_nvfp4_columnwise",
    "rht_matrix",
    "unpack_e2m1_codes",
]

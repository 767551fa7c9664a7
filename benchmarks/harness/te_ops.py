"""Transformer Engine objects by name: quantizers, recipes, the reference quantizer, GEMMs.

Transformer Engine is imported on first use, not at import: asv's discovery imports every module of
the suite, also where TE is not installed (the torch-ref CI run).
"""

from __future__ import annotations

import functools
import importlib
from types import ModuleType, SimpleNamespace
from typing import Any

import torch

# the ratio of an NVFP4 global amax to the FP32 decode scale: 6 (E2M1 max) * 448 (E4M3 max)
NVFP4_GLOBAL = 6.0 * 448.0

# quantizer variants of the quantize and contract suites
NVFP4_VARIANTS = {
    "nvfp4-row": {"rowwise": True, "columnwise": False},
    "nvfp4-col": {"rowwise": False, "columnwise": True},
    "nvfp4-both": {"rowwise": True, "columnwise": True},
    "nvfp4-rht": {"rowwise": True, "columnwise": True, "with_rht": True, "with_post_rht_amax": True},
    "nvfp4-rht-col": {"rowwise": False, "columnwise": True, "with_rht": True, "with_post_rht_amax": True},
    "nvfp4-2d": {"rowwise": True, "columnwise": True, "with_2d_quantization": True},
    "nvfp4-sr": {
        "rowwise": True,
        "columnwise": True,
        "with_rht": True,
        "with_post_rht_amax": True,
        "stochastic_rounding": True,
    },
}


# TE's pure-PyTorch NVFP4 reference, by its module names: 2.19 and later first, then 2.18 and before
REFERENCE_NVFP4_MODULES = ("reference_nvfp4", "quantization_ref_nvfp4")
REFERENCE_UTILS_MODULES = ("reference_utils", "utils")
REFERENCE_RHT_2D_FACTORIES = ("nvfp4_ref_rht_2d_factory", "nvfp4_ref_rht_2d_quantizer_factory")


def _first_module(package: str, names: tuple[str, ...]) -> ModuleType:
    for name in names:
        try:
            return importlib.import_module(f"{package}.{name}")
        except ModuleNotFoundError as e:
            if e.name != f"{package}.{name}":
                raise
    raise ImportError(f"{package} has none of the modules {', '.join(names)}")


def reference_recipes(package: str = "transformer_engine.pytorch.custom_recipes") -> SimpleNamespace:
    """TE's NVFP4 reference module, its utils and its RHT 2D recipe factory, under this release's names."""
    ref = _first_module(package, REFERENCE_NVFP4_MODULES)
    factory = next((getattr(ref, name) for name in REFERENCE_RHT_2D_FACTORIES if hasattr(ref, name)), None)
    if factory is None:
        raise ImportError(f"{ref.__name__} has none of {', '.join(REFERENCE_RHT_2D_FACTORIES)}")
    return SimpleNamespace(
        ref=ref, utils=_first_module(package, REFERENCE_UTILS_MODULES), rht_2d_factory=factory
    )


@functools.cache
def loaded() -> SimpleNamespace:
    from benchmarks.harness.te_import import import_transformer_engine

    te = import_transformer_engine()
    import transformer_engine_torch as tex
    from transformer_engine.common import recipe
    from transformer_engine.pytorch.cpp_extensions import general_gemm

    from benchmarks.harness import perturb

    reference = reference_recipes()
    namespace = SimpleNamespace(
        te=te,
        tex=tex,
        recipe=recipe,
        general_gemm=general_gemm,
        ref=reference.ref,
        ref_utils=reference.utils,
        ref_rht_2d_factory=reference.rht_2d_factory,
        fp8=tex.DType.kFloat8E4M3,
        fp4=tex.DType.kFloat4E2M1,
    )
    perturb.apply_to_te(namespace)
    return namespace


def quantizer(variant: str, *, rowwise: bool = True, columnwise: bool = True) -> Any:
    """A native TE quantizer for a variant name (NVFP4 variants set their own usages)."""
    m = loaded()
    if variant == "nvfp4":
        variant = "nvfp4-both"
    if variant in NVFP4_VARIANTS:
        return m.te.NVFP4Quantizer(fp4_dtype=m.fp4, **NVFP4_VARIANTS[variant])
    if variant == "fp8-current":
        return m.te.Float8CurrentScalingQuantizer(
            m.fp8, torch.device("cuda"), rowwise=rowwise, columnwise=columnwise
        )
    if variant in ("fp8-block", "fp8-block-1d"):
        return m.te.Float8BlockQuantizer(m.fp8, rowwise=rowwise, columnwise=columnwise, block_scaling_dim=1)
    if variant == "fp8-block-2d":
        return m.te.Float8BlockQuantizer(m.fp8, rowwise=rowwise, columnwise=columnwise, block_scaling_dim=2)
    if variant == "mxfp8":
        return m.te.MXFP8Quantizer(m.fp8, rowwise=rowwise, columnwise=columnwise)
    if variant == "fp8-delayed":
        scale = torch.ones(1, dtype=torch.float32, device="cuda")
        amax = torch.zeros(1, dtype=torch.float32, device="cuda")
        return m.te.Float8Quantizer(scale, amax, m.fp8, rowwise=rowwise, columnwise=columnwise)
    raise ValueError(f"unknown quantizer variant {variant!r}")


def reference_quantizer(variant: str) -> Any:
    """TE's pure-PyTorch NVFP4QuantizerRef for an NVFP4 variant (no stochastic rounding there)."""
    m = loaded()
    opts = NVFP4_VARIANTS["nvfp4-both" if variant == "nvfp4" else variant]
    if opts.get("stochastic_rounding"):
        raise ValueError("NVFP4QuantizerRef has no stochastic rounding")
    return m.ref.NVFP4QuantizerRef(
        dtype=m.ref_utils.Fp4Formats.E2M1,
        rowwise=opts["rowwise"],
        columnwise=opts["columnwise"],
        quant_tile_shape=(16, 16) if opts.get("with_2d_quantization") else (1, 16),
        with_rht=bool(opts.get("with_rht")),
    )


def reference_rht_signs() -> torch.Tensor:
    return loaded().ref.get_wgrad_sign_vector()


def dequantize_reference(q: Any, columnwise: bool = False) -> torch.Tensor:
    """FP32 values of an NVFP4TensorRef (2D): E2M1 code x E4M3 block scale x global amax / (6*448)."""
    data = q.data_t if columnwise else q.data
    scale = q.scale_t if columnwise else q.scale
    amax = q.global_amax_col if columnwise else q.global_amax_row
    values = loaded().ref.cast_from_fp4x2(data, torch.float32)
    rows, cols = values.shape
    blocks = scale.view(torch.float8_e4m3fn).to(torch.float32)[:rows, : cols // 16]
    return values * blocks.repeat_interleave(16, dim=1) * (amax.to(torch.float32) / NVFP4_GLOBAL)


def recipe(name: str) -> Any | None:
    """The autocast recipe of a Linear recipe name; None for plain bf16."""
    m = loaded()
    if name == "bf16":
        return None
    if name == "fp8-delayed":
        return m.recipe.DelayedScaling()
    if name == "fp8-current":
        return m.recipe.Float8CurrentScaling()
    if name == "fp8-block":
        return m.recipe.Float8BlockScaling()
    if name == "mxfp8":
        return m.recipe.MXFP8BlockScaling()
    if name == "nvfp4":
        return m.recipe.NVFP4BlockScaling()
    if name == "nvfp4-ref":
        return m.recipe.CustomRecipe(qfactory=m.ref_rht_2d_factory)
    raise ValueError(f"unknown recipe {name!r}")


def gemm(w: Any, x: Any) -> torch.Tensor:
    """x @ w.T through TE's general_gemm (TN layout, BF16 output)."""
    out, *_ = loaded().general_gemm(w, x, out_dtype=torch.bfloat16, layout="TN")
    return out


def inner_buffers(t: Any) -> dict[str, torch.Tensor]:
    """The named inner tensors of a quantized tensor or storage (None entries left out): those its class
    declares (`_INNER_TENSORS`, since TE's commit bf4b2b9f8, first released in 2.19), else its tensor-valued
    attributes. Reading the declaration alone found none on TE 2.18 and earlier, and every check that
    compares buffers then compared nothing and passed."""
    declared = getattr(type(t), "_INNER_TENSORS", None)
    if declared is None:
        return {n: v for n, v in vars(t).items() if isinstance(v, torch.Tensor)}
    names = [attr for attr, _ in declared]
    return {n: getattr(t, n) for n in names if getattr(t, n, None) is not None}


def valid_buffers(t: Any) -> dict[str, torch.Tensor]:
    """The inner tensors that hold the value: a transpose TE itself flags as stale is not part of it."""
    found = inner_buffers(t)
    if getattr(t, "_transpose_invalid", False):
        found.pop("_transpose", None)
    return found


def fill_valid(t: Any, generator: torch.Generator) -> None:
    """Fill an empty quantized tensor with valid codes (random data, unit scales, amax 1).

    Lets the contract suites exercise NVFP4/MXFP8 tensors on GPUs that cannot run their quantize
    kernels, without ever launching one.
    """
    for name, buf in inner_buffers(t).items():
        if "amax" in name:
            buf.fill_(1.0)
        elif "scale" in name:
            if buf.dtype == torch.float32:
                buf.fill_(1.0)
            else:
                buf.fill_(0x38 if isinstance(t, loaded().te.NVFP4Tensor) else 127)  # E4M3 1.0 / E8M0 1.0
        else:
            cpu = torch.randint(0, 256, buf.shape, dtype=torch.uint8, generator=generator)
            cpu &= 0x77  # no E4M3 NaN codes; positive E2M1 nibbles
            buf.copy_(cpu.view(buf.dtype) if buf.dtype != torch.uint8 else cpu)

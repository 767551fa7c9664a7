"""Deliberate, documented changes a campaign applies to the stack under test (TEWATCH_PERTURB).

A campaign runs the suites twice, the second time with some of these applied at import time, and
expects the service to flag exactly what they break. Each one imitates a real class of TE bug:

- `torchref-slow-quantize` (performance): torch-ref's quantize does its work four times (redundant
  passes, like casts that are no longer fused) on every backend that uses torch-ref. On a CPU at CI
  sizes a process's level moves by up to 70 % (the same quantize took 380 us in one process, 650 us in
  another), which a doubling does not always stand out of.
- `torchref-rank3-dequantize` (correctness): torch-ref's dequantize of a 3D or 4D tensor swaps its two
  leading dimensions' data, the kind of layout mix-up that only appears above rank 2.
- `te-ref-extra-sync` (performance): TE's NVFP4QuantizerRef.quantize synchronises the device and copies
  its input first. On an H200 this stayed inside run-to-run noise (the reference quantize is a 3-8 ms
  pure-PyTorch pipeline): a change too small to flag, kept as such.
- `te-ref-slow-quantize` (performance): NVFP4QuantizerRef.quantize does its work twice, the GPU
  counterpart of `torchref-slow-quantize` (on an H200 quantize levels move by 0.2 % between runs).
- `fp8-current-collapsed-transpose` (correctness): Float8CurrentScalingQuantizer predicts a 2D
  `_transpose` buffer for tracing at rank >= 3 while the kernel allocates it N-D: the shape-contract
  mismatch of NVFP4 (TE issue #3626), moved to FP8 current scaling, so it shows on Hopper too.
"""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Callable
from typing import Any

ENV = "TEWATCH_PERTURB"


def requested() -> set[str]:
    names = {n.strip() for n in os.environ.get(ENV, "").split(",") if n.strip()}
    unknown = names - set(TORCH_REF) - set(TE)
    if unknown:
        raise ValueError(f"{ENV} names unknown perturbations: {', '.join(sorted(unknown))}; "
                         f"known: {', '.join(sorted(set(TORCH_REF) | set(TE)))}")
    return names


def _with_extra_passes(original: Callable, extra: int = 1) -> Callable:
    @functools.wraps(original)
    def with_extra_passes(x: Any, *args: Any, **kwargs: Any) -> Any:
        for _ in range(extra):
            original(x, *args, **kwargs)
        return original(x, *args, **kwargs)

    return with_extra_passes


def _slow_quantize(emu: Any) -> None:
    for name in ("quantize_nvfp4", "quantize_nvfp4_columnwise"):
        setattr(emu, name, _with_extra_passes(getattr(emu, name), extra=3))


def _rank3_dequantize(emu: Any) -> None:
    original = emu.dequantize_nvfp4

    @functools.wraps(original)
    def mixed_up(q: Any, *args: Any, **kwargs: Any) -> Any:
        out = original(q, *args, **kwargs)
        if out.dim() >= 3 and out.shape[0] > 1:
            return out.roll(1, dims=0)
        return out

    emu.dequantize_nvfp4 = mixed_up


def _te_ref_extra_sync(te: Any) -> None:
    import torch

    cls = te.ref.NVFP4QuantizerRef
    original = cls.quantize

    @functools.wraps(original)
    def synchronised(self: Any, tensor: Any, *args: Any, **kwargs: Any) -> Any:
        torch.cuda.synchronize()
        return original(self, tensor.clone(), *args, **kwargs)

    cls.quantize = synchronised


def _te_ref_slow_quantize(te: Any) -> None:
    cls = te.ref.NVFP4QuantizerRef
    cls.quantize = _with_extra_passes(cls.quantize)


def _fp8_current_collapsed_transpose(te: Any) -> None:
    cls = te.te.Float8CurrentScalingQuantizer
    original = cls.inner_tensor_specs

    @functools.wraps(original)
    def collapsed(self: Any, shape: Any) -> Any:
        specs = original(self, shape)
        shape = tuple(shape)
        if "_transpose" in specs and len(shape) >= 3:
            specs["_transpose"] = ((shape[-1], math.prod(shape[:-1])), specs["_transpose"][1])
        return specs

    cls.inner_tensor_specs = collapsed


TORCH_REF: dict[str, Callable[[Any], None]] = {
    "torchref-slow-quantize": _slow_quantize,
    "torchref-rank3-dequantize": _rank3_dequantize,
}
TE: dict[str, Callable[[Any], None]] = {
    "te-ref-extra-sync": _te_ref_extra_sync,
    "te-ref-slow-quantize": _te_ref_slow_quantize,
    "fp8-current-collapsed-transpose": _fp8_current_collapsed_transpose,
}


def apply_to_torch_ref() -> None:
    """Patch benchmarks.nvfp4_emulation in place; called once when the harness is imported."""
    names = requested() & set(TORCH_REF)
    if names:
        from benchmarks import nvfp4_emulation as emu

        for name in sorted(names):
            TORCH_REF[name](emu)


def apply_to_te(te: Any) -> None:
    """Patch the TE namespace of benchmarks.harness.te_ops right after TE is imported."""
    for name in sorted(requested() & set(TE)):
        TE[name](te)

"""Capability gates: which cases cannot run on this GPU, decided by Transformer Engine's own checks.

A gated case is recorded `unsupported` and skipped (asv NaN), never run: native NVFP4 kernels below
sm_100 print device errors and return garbage instead of raising.

The checks are injected (`Capabilities`), so the decisions are testable without a GPU. `tewatch run`
evaluates TE's checks once in its probe and hands them to every benchmark process through
TEWATCH_CAPABILITIES, which saves a Transformer Engine import in every gated process.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass

CheckResult = tuple[bool, str]
CAPABILITIES_ENV = "TEWATCH_CAPABILITIES"
FEATURES = ("cuda", "fp8", "fp8_block", "mxfp8", "nvfp4")

# what each recipe or quantizer kind needs from the device, on the `te` backend
_NEEDS: dict[str, tuple[str, ...]] = {
    "bf16": ("cuda",),
    "fp8-delayed": ("cuda", "fp8"),
    "fp8-current": ("cuda", "fp8"),
    "fp8-block": ("cuda", "fp8_block"),
    "mxfp8": ("cuda", "mxfp8"),
    "nvfp4": ("cuda", "nvfp4"),
}
# te-ref runs TE's pure-PyTorch NVFP4 reference; autocast still asserts FP8 availability
_NEEDS_TE_REF = ("cuda", "fp8")
# backends of the project's own code in plain PyTorch: they run without TE, on CPU or any GPU (torch-ref,
# the NVFP4 emulation; torch, the training suite's model in plain PyTorch)
TE_FREE_BACKENDS = ("torch-ref", "torch")


@dataclass(frozen=True)
class Capabilities:
    """Answers of the form TE gives: (supported, reason when not)."""

    cuda: CheckResult
    fp8: CheckResult
    fp8_block: CheckResult
    mxfp8: CheckResult
    nvfp4: CheckResult
    # why Transformer Engine could not be asked (not installed, broken install): te cases are errors
    te_error: str = ""

    def to_json(self) -> dict:
        out: dict = {name: list(getattr(self, name)) for name in FEATURES}
        if self.te_error:
            out["te_error"] = self.te_error
        return out

    @classmethod
    def from_json(cls, data: dict) -> Capabilities:
        missing = [n for n in FEATURES if n not in data]
        if missing:
            raise ValueError(f"capabilities lack {missing}")
        return cls(
            **{n: (bool(data[n][0]), str(data[n][1])) for n in FEATURES},
            te_error=str(data.get("te_error", "")),
        )


class TransformerEngineUnavailable(RuntimeError):
    """A te / te-ref case where Transformer Engine cannot be imported: an error, not a gate."""


def family(recipe: str) -> str:
    """The capability family of a recipe or quantizer variant name ('nvfp4-rht' -> 'nvfp4')."""
    for name in sorted(_NEEDS, key=len, reverse=True):
        if recipe == name or recipe.startswith(name + "-"):
            return name
    raise ValueError(f"no capability family for {recipe!r}")


def unsupported_reason(backend: str, recipe: str, caps: Capabilities, device: str) -> str | None:
    """None when the case may run; else the reason it is gated. Raises when TE is unavailable."""
    if backend not in TE_FREE_BACKENDS and caps.te_error:
        raise TransformerEngineUnavailable(caps.te_error)
    if backend in TE_FREE_BACKENDS:
        if device == "cuda" and not caps.cuda[0]:
            return caps.cuda[1]
        return None
    needs = _NEEDS_TE_REF if backend == "te-ref" else _NEEDS[family(recipe)]
    for feature in needs:
        ok, reason = getattr(caps, feature)
        if not ok:
            return reason or f"{feature} is not supported on this device"
    return None


def capabilities_from_te() -> Capabilities:
    """Ask Transformer Engine (and torch for CUDA itself). Imports TE."""
    import torch

    if not torch.cuda.is_available():
        return capabilities_without_cuda()
    from benchmarks.harness.te_import import import_transformer_engine

    q = import_transformer_engine().quantization

    def ask(fn: Callable[[], CheckResult]) -> CheckResult:
        ok, reason = fn()
        return bool(ok), str(reason or "")

    return Capabilities(
        cuda=(True, ""),
        fp8=ask(q.check_fp8_support),
        fp8_block=ask(q.check_fp8_block_scaling_support),
        mxfp8=ask(q.check_mxfp8_support),
        nvfp4=ask(q.check_nvfp4_support),
    )


def capabilities_without_cuda() -> Capabilities:
    """No CUDA device: nothing to ask Transformer Engine."""
    no = (False, "CUDA device required")
    return Capabilities(cuda=no, fp8=no, fp8_block=no, mxfp8=no, nvfp4=no)


def capabilities_without_te(reason: str) -> Capabilities:
    """When Transformer Engine cannot be imported: only torch's view of CUDA."""
    import torch

    cuda = (True, "") if torch.cuda.is_available() else (False, "CUDA device required")
    no = (False, reason)
    return Capabilities(cuda=cuda, fp8=no, fp8_block=no, mxfp8=no, nvfp4=no, te_error=reason)


def current_capabilities(needs_te: bool) -> Capabilities:
    """From TEWATCH_CAPABILITIES when the wrapper set it, else by asking TE (or torch) here."""
    raw = os.environ.get(CAPABILITIES_ENV)
    if raw:
        return Capabilities.from_json(json.loads(raw))
    if needs_te:
        return capabilities_from_te()
    import torch

    cuda = (True, "") if torch.cuda.is_available() else (False, "CUDA device required")
    return Capabilities(cuda=cuda, fp8=cuda, fp8_block=cuda, mxfp8=cuda, nvfp4=cuda)

"""Capability gates decided from Transformer Engine-shaped answers (TE cannot run here)."""

import json

import pytest

from benchmarks.harness import gates

NVFP4_NO = (False, "Device compute capability 10.0 or higher required for NVFP4 execution.")
MXFP8_NO = (False, "Device compute capability 10.0 or higher required for MXFP8 execution.")
YES = (True, "")
# what TE 2.20.2 answered on the H200 (research/h200-te-probe.md) and what a B200 answers
H200 = gates.Capabilities(cuda=YES, fp8=YES, fp8_block=YES, mxfp8=MXFP8_NO, nvfp4=NVFP4_NO)
B200 = gates.Capabilities(cuda=YES, fp8=YES, fp8_block=YES, mxfp8=YES, nvfp4=YES)
CPU = gates.Capabilities(*[(False, "CUDA device required")] * 5)


@pytest.mark.parametrize("recipe", ["nvfp4", "nvfp4-rht", "nvfp4-sr", "nvfp4-2d", "mxfp8"])
def test_native_nvfp4_and_mxfp8_are_gated_on_hopper_with_tes_reason(recipe: str) -> None:
    reason = gates.unsupported_reason("te", recipe, H200, "cuda")
    assert reason is not None and "10.0 or higher" in reason


@pytest.mark.parametrize("recipe", ["bf16", "fp8-delayed", "fp8-current", "fp8-block"])
def test_fp8_and_bf16_run_on_hopper(recipe: str) -> None:
    assert gates.unsupported_reason("te", recipe, H200, "cuda") is None


@pytest.mark.parametrize("recipe", ["nvfp4", "mxfp8", "fp8-block", "bf16"])
def test_everything_runs_on_blackwell(recipe: str) -> None:
    assert gates.unsupported_reason("te", recipe, B200, "cuda") is None


def test_reference_backend_needs_fp8_autocast_but_not_nvfp4_kernels() -> None:
    assert gates.unsupported_reason("te-ref", "nvfp4", H200, "cuda") is None
    no_fp8 = gates.Capabilities(cuda=YES, fp8=(False, "sm 8.9 needed"), fp8_block=YES, mxfp8=YES, nvfp4=YES)
    assert gates.unsupported_reason("te-ref", "nvfp4", no_fp8, "cuda") == "sm 8.9 needed"


def test_torch_ref_runs_on_cpu_and_needs_only_cuda_on_a_gpu_profile() -> None:
    assert gates.unsupported_reason("torch-ref", "nvfp4", CPU, "cpu") is None
    assert gates.unsupported_reason("torch-ref", "nvfp4", CPU, "cuda") == "CUDA device required"


def test_block_scaling_gate_follows_its_own_check() -> None:
    old_cuda = gates.Capabilities(
        cuda=YES, fp8=YES, fp8_block=(False, "CUDA 12.9+ needed"), mxfp8=MXFP8_NO, nvfp4=NVFP4_NO
    )
    assert gates.unsupported_reason("te", "fp8-block", old_cuda, "cuda") == "CUDA 12.9+ needed"
    assert gates.unsupported_reason("te", "fp8-current", old_cuda, "cuda") is None


def test_unknown_recipe_is_an_error_not_a_silent_pass() -> None:
    with pytest.raises(ValueError, match="no capability family"):
        gates.unsupported_reason("te", "int4", H200, "cuda")


def test_missing_transformer_engine_is_an_error_for_te_cases_only() -> None:
    broken = gates.Capabilities(
        cuda=YES,
        fp8=NVFP4_NO,
        fp8_block=NVFP4_NO,
        mxfp8=NVFP4_NO,
        nvfp4=NVFP4_NO,
        te_error="ImportError: libcudnn",
    )
    with pytest.raises(gates.TransformerEngineUnavailable, match="libcudnn"):
        gates.unsupported_reason("te", "fp8-current", broken, "cuda")
    with pytest.raises(gates.TransformerEngineUnavailable):
        gates.unsupported_reason("te-ref", "nvfp4", broken, "cuda")
    assert gates.unsupported_reason("torch-ref", "nvfp4", broken, "cuda") is None
    assert gates.unsupported_reason("torch", "fp32", broken, "cuda") is None


def test_the_plain_pytorch_training_backend_is_gated_like_torch_ref() -> None:
    """The training suite's `torch` backend: its recipes (fp32, bf16) need no TE and no FP8."""
    assert gates.unsupported_reason("torch", "fp32", CPU, "cpu") is None
    assert gates.unsupported_reason("torch", "bf16", H200, "cuda") is None
    assert gates.unsupported_reason("torch", "bf16", CPU, "cuda") == "CUDA device required"


def test_capabilities_travel_through_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(gates.CAPABILITIES_ENV, json.dumps(H200.to_json()))
    assert gates.current_capabilities(needs_te=True) == H200
    monkeypatch.setenv(gates.CAPABILITIES_ENV, json.dumps({"cuda": [True, ""]}))
    with pytest.raises(ValueError, match="lack"):
        gates.current_capabilities(needs_te=True)

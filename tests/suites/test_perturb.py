"""The campaign's perturbations: names are checked, and the TE ones patch the class they name.

Transformer Engine does not run on this machine, so the TE patches are applied to a small class of the
same shape; the GPU campaign (tests/fixtures/h200-campaign) shows them on TE itself."""

from types import SimpleNamespace
from typing import ClassVar

import pytest

from benchmarks.harness import perturb


def test_unknown_names_fail_with_the_known_ones_listed(monkeypatch) -> None:
    monkeypatch.setenv(perturb.ENV, "te-ref-slow-quantize,no-such-change")
    with pytest.raises(
        ValueError, match=r"unknown perturbations: no-such-change; known: .*te-ref-slow-quantize"
    ):
        perturb.requested()


def test_te_ref_slow_quantize_makes_the_reference_quantize_do_its_work_twice(monkeypatch) -> None:
    calls = []

    class ReferenceQuantizer:
        def quantize(self, tensor, **kwargs):
            calls.append((tensor, kwargs))
            return f"quantized {tensor}"

    monkeypatch.setenv(perturb.ENV, "te-ref-slow-quantize")
    namespace = SimpleNamespace(ref=SimpleNamespace(NVFP4QuantizerRef=ReferenceQuantizer))
    perturb.apply_to_te(namespace)
    assert ReferenceQuantizer().quantize("x", rowwise=True) == "quantized x"
    assert calls == [("x", {"rowwise": True})] * 2


def test_torchref_slow_quantize_makes_both_emulated_quantizers_do_their_work_four_times() -> None:
    calls = []

    def quantize(tensor, **kwargs):
        calls.append(tensor)
        return f"quantized {tensor}"

    emu = SimpleNamespace(quantize_nvfp4=quantize, quantize_nvfp4_columnwise=quantize)
    perturb.TORCH_REF["torchref-slow-quantize"](emu)
    assert emu.quantize_nvfp4("x") == "quantized x" and emu.quantize_nvfp4_columnwise("y") == "quantized y"
    assert calls == ["x"] * 4 + ["y"] * 4


def test_a_sized_slowdown_adds_its_share_of_the_calls_own_time_after_the_cold_calls() -> None:
    calls: list[int] = []

    class Clock:
        """The call's own time as the clock reads it (the first two are cold, as a case's checks are),
        and the delays asked for: no wall time, so a busy machine cannot move the figures."""

        delays: ClassVar[list[float]] = []

        def elapsed(self, run) -> float:
            run()
            return 0.006 if len(calls) <= 2 else 0.002

        def delay(self, seconds: float) -> None:
            Clock.delays.append(seconds)

    slower = perturb.slower_by("gemm-slower-5", calls.append, 0.10, Clock)
    perturb.touched.clear()
    for i in range(30):
        slower(i)
    assert calls == list(range(30)) and perturb.touched["gemm-slower-5"] == 30
    # the calibration calls run undelayed; every later one waits 10 % of the warm call (2 ms), not of the
    # cold ones (6 ms)
    assert len(Clock.delays) == 30 - perturb.CALIBRATION_CALLS
    assert all(abs(d - 0.0002) < 1e-12 for d in Clock.delays)


def test_the_sized_te_perturbations_patch_what_they_name(monkeypatch) -> None:
    def general_gemm(a, b, **kwargs):
        return "out"

    class Reference:
        def quantize(self, tensor):
            return "q"

        def _apply_rht(self, tensor):
            return "rht"

    class Fp8Current:
        def quantize_impl(self, tensor):
            return "fp8"

        def update_quantized(self, tensor, out):
            return out

    class Tensor:
        reads = 0

        def abs(self):
            Tensor.reads += 1
            return self

        def amax(self):
            return self

    monkeypatch.setenv(
        perturb.ENV, "gemm-slower-5,te-ref-quantize-slower-6,te-ref-rht-slower-12,fp8-current-extra-pass"
    )
    namespace = SimpleNamespace(
        general_gemm=general_gemm,
        ref=SimpleNamespace(NVFP4QuantizerRef=Reference),
        te=SimpleNamespace(Float8CurrentScalingQuantizer=Fp8Current),
    )
    perturb.apply_to_te(namespace)
    assert namespace.general_gemm is not general_gemm and namespace.general_gemm.__wrapped__ is general_gemm
    assert Reference.quantize.__name__ == "quantize" and Reference._apply_rht.__name__ == "_apply_rht"
    perturb.touched.clear()
    tensor = Tensor()
    assert Fp8Current().quantize_impl(tensor) == "fp8" and Fp8Current().update_quantized(tensor, "o") == "o"
    assert Tensor.reads == 2 and perturb.touched["fp8-current-extra-pass"] == 2


def test_the_stale_nd_update_leaves_tensors_of_rank_three_as_they_were(monkeypatch) -> None:
    class Fp8Current:
        def update_quantized(self, src, dst):
            dst.append(src.dim())
            return dst

    class Source:
        def __init__(self, rank: int) -> None:
            self.rank = rank

        def dim(self) -> int:
            return self.rank

    monkeypatch.setenv(perturb.ENV, "fp8-current-stale-nd-update")
    perturb.apply_to_te(SimpleNamespace(te=SimpleNamespace(Float8CurrentScalingQuantizer=Fp8Current)))
    assert Fp8Current().update_quantized(Source(2), []) == [2]
    assert Fp8Current().update_quantized(Source(3), []) == []


def test_the_memory_perturbations_hold_what_they_name(monkeypatch) -> None:
    import torch

    class Linear:
        def forward(self, inp):
            return inp

    class Fp8Tensor:
        _INNER_TENSORS: ClassVar[list] = [("_data", None), ("_scale_inv", None)]

        def __init__(self, data) -> None:
            self._data, self._scale_inv = data, torch.ones(1)

    class Fp8Current:
        def quantize_impl(self, tensor):
            return Fp8Tensor(tensor.to(torch.uint8))

        def update_quantized(self, src, dst):
            dst._data.copy_(src.to(torch.uint8))
            return dst

    def general_gemm(a, b, **kwargs):
        return a

    monkeypatch.setenv(perturb.ENV, "linear-leak-1mib,gemm-extra-workspace-64mib,fp8-current-cache-twice")
    monkeypatch.setattr(perturb, "leaked", [])
    monkeypatch.setattr(perturb, "workspaces", [])
    namespace = SimpleNamespace(
        general_gemm=general_gemm, te=SimpleNamespace(Linear=Linear, Float8CurrentScalingQuantizer=Fp8Current)
    )
    perturb.apply_to_te(namespace)
    x = torch.arange(6.0)
    for _ in range(3):
        assert Linear().forward(x) is x
    assert [t.numel() for t in perturb.leaked] == [perturb.MIB] * 3
    namespace.general_gemm(x, x)
    namespace.general_gemm(x, x)
    assert [t.numel() for t in perturb.workspaces] == [64 * perturb.MIB]
    quantizer = Fp8Current()
    out = quantizer.quantize_impl(x)
    assert set(quantizer._kept_twice) == {"_data"}  # the data again, not the scale
    assert torch.equal(quantizer._kept_twice["_data"], out._data)
    assert quantizer._kept_twice["_data"].data_ptr() != out._data.data_ptr()
    quantizer.update_quantized(x + 1, out)
    assert torch.equal(quantizer._kept_twice["_data"], (x + 1).to(torch.uint8))


def test_the_fp8_shift_quantizes_its_input_one_percent_larger(monkeypatch) -> None:
    import torch

    seen = []

    class Fp8Current:
        def quantize_impl(self, tensor):
            seen.append(tensor)
            return "fp8"

        def update_quantized(self, src, dst):
            seen.append(src)
            return dst

    monkeypatch.setenv(perturb.ENV, "fp8-current-shift-1pct")
    perturb.apply_to_te(SimpleNamespace(te=SimpleNamespace(Float8CurrentScalingQuantizer=Fp8Current)))
    x = torch.tensor([1.0, -2.0])
    assert Fp8Current().quantize_impl(x) == "fp8" and Fp8Current().update_quantized(x, "o") == "o"
    assert all(torch.allclose(t, x * 1.01) for t in seen) and len(seen) == 2

"""The campaign's perturbations: names are checked, and the TE ones patch the class they name.

Transformer Engine does not run on this machine, so the TE patches are applied to a small class of the
same shape; the GPU campaign (tests/fixtures/h200-campaign) shows them on TE itself."""

from types import SimpleNamespace

import pytest

from benchmarks.harness import perturb


def test_unknown_names_fail_with_the_known_ones_listed(monkeypatch) -> None:
    monkeypatch.setenv(perturb.ENV, "te-ref-slow-quantize,no-such-change")
    with pytest.raises(ValueError, match="unknown perturbations: no-such-change; known: .*te-ref-slow-quantize"):
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

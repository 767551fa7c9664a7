"""Quantize: NVFP4 (row-wise, column-wise, both, RHT, 2D blocks, stochastic rounding) and the FP8
baselines (current and block scaling), at shapes from real models and input ranks 2D/3D/4D."""

from __future__ import annotations

from typing import Any

from benchmarks.harness import records
from benchmarks.harness.case import Case, Prepared
from benchmarks.harness.numerics import E4M3_MAX, error_metrics, relative_error, scale_health
from benchmarks.harness.params import invalid_combinations
from benchmarks.harness.profiles import Profile, current_profile, parse_shape, selected_backends
from benchmarks.harness.timed_output import OutputCheck

NVFP4_VARIANTS = ["nvfp4-row", "nvfp4-col", "nvfp4-both", "nvfp4-rht", "nvfp4-2d", "nvfp4-sr"]
FP8_VARIANTS = ["fp8-current", "fp8-block"]
# normwise dequantization error bounds for a standard normal input
TOLERANCE = {"nvfp4": 0.15, "nvfp4-sr": 0.2, "fp8": 0.04}
_PROFILE = current_profile()


def _is_case(backend: str, variant: str, shape: str) -> bool:
    if variant in FP8_VARIANTS:
        return backend == "te"
    if backend == "te-ref":
        return variant != "nvfp4-sr"  # the reference has no stochastic rounding
    return True


def _emulated_quantize(x: Any, variant: str, generator: Any) -> dict[str, Any]:
    from benchmarks import nvfp4_emulation as emu

    rows = variant != "nvfp4-col"
    cols = variant not in ("nvfp4-row",)
    opts: dict[str, Any] = {"block_2d": variant == "nvfp4-2d"}
    col_opts = dict(opts, rht=variant in ("nvfp4-rht", "nvfp4-sr"))
    if variant == "nvfp4-sr":
        opts = dict(opts, stochastic_rounding=True, generator=generator)
        col_opts = dict(col_opts, stochastic_rounding=True, generator=generator)
    out = {}
    if rows:
        out["rowwise"] = emu.quantize_nvfp4(x, **opts)
    if cols:
        out["columnwise"] = emu.quantize_nvfp4_columnwise(x, **col_opts)
    return out


def _emulated_output_check(variant: str) -> OutputCheck:
    """Bit for bit; stochastic rounding's dequantized values within twice its tolerance of each other."""
    if variant != "nvfp4-sr":
        return OutputCheck()

    def dequantized(q: dict[str, Any]) -> list[Any]:
        from benchmarks import nvfp4_emulation as emu

        return [emu.dequantize_nvfp4(q[k], torch_float32()) for k in sorted(q)]

    return OutputCheck(2 * TOLERANCE["nvfp4-sr"], dequantized)


class Quantize(Case):
    param_names = ["backend", "variant", "shape"]
    params = [
        list(selected_backends()),
        NVFP4_VARIANTS + (FP8_VARIANTS if "te" in selected_backends() else []),
        list(_PROFILE.quantize_shapes),
    ]
    skip_params = invalid_combinations(params, _is_case)
    op = "quantize"
    main_check = "dequantize_error"

    def labels(self, p: dict[str, Any]) -> dict[str, Any]:
        recipe = p["variant"] if p["variant"] in FP8_VARIANTS else "nvfp4"
        return {
            "backend": p["backend"],
            "recipe": recipe,
            "variant": p["variant"],
            "rank": len(parse_shape(p["shape"])),
            "op": self.op,
        }

    def gate_key(self, p: dict[str, Any]) -> tuple[str, str]:
        return p["backend"], p["variant"]

    def prepare(self, p: dict[str, Any], profile: Profile) -> Prepared:
        import torch

        torch.manual_seed(0)
        shape = parse_shape(p["shape"])
        x = torch.randn(shape, dtype=torch.bfloat16, device=profile.device)
        x2d = x.reshape(-1, shape[-1])
        backend, variant = p["backend"], p["variant"]
        if backend == "torch-ref":
            generator = torch.Generator(device=profile.device).manual_seed(1)
            q = _emulated_quantize(x, variant, generator)
            self._check_emulated(q, x2d, variant)
            return Prepared(
                fn=lambda: _emulated_quantize(x, variant, generator),
                device=profile.device,
                output_check=_emulated_output_check(variant),
            )
        if backend == "te-ref":
            from benchmarks.harness import te_ops

            ref = te_ops.reference_quantizer(variant)
            q = ref.quantize(x)
            self._check_reference(ref, q, x2d)
            return Prepared(fn=lambda: ref.quantize(x), device="cuda", output_check=OutputCheck())
        return self._prepare_native(x, x2d, variant)

    # -- checks ------------------------------------------------------------------------------------

    def _tolerance(self, variant: str) -> float:
        return TOLERANCE["nvfp4-sr"] if variant == "nvfp4-sr" else TOLERANCE["nvfp4"]

    def _check_emulated(self, q: dict[str, Any], x2d: Any, variant: str) -> None:
        from benchmarks import nvfp4_emulation as emu

        tol = self._tolerance(variant)
        if "rowwise" in q:
            deq = emu.dequantize_nvfp4(q["rowwise"], torch_float32()).reshape(x2d.shape)
            self.record.add(records.compare("dequantize_error", "rel_l2", relative_error(deq, x2d), tol))
            with self.optional("error metrics"):
                self.record.errors("dequantized_vs_input", error_metrics(deq, x2d))
                self._scale_health(q["rowwise"].scales, q["rowwise"].global_amax)
        if "columnwise" in q:
            cq = q["columnwise"]
            expected = x2d.t().contiguous()
            if cq.rht:
                expected = emu.apply_rht(expected)
            deq = emu.dequantize_nvfp4(cq, torch_float32())
            self.record.add(
                records.compare("dequantize_error_columnwise", "rel_l2", relative_error(deq, expected), tol)
            )
            with self.optional("error metrics"):
                self.record.errors("dequantized_columnwise_vs_input", error_metrics(deq, expected))
                if "rowwise" not in q:
                    self._scale_health(cq.scales, cq.global_amax)

    def _scale_health(self, scales: Any, global_amax: Any, suffix: str = "") -> None:
        """The block scales' health and the tensor's global amax (NVFP4)."""
        for name, share in scale_health(scales).items():
            self.record.metric(name + suffix, share, "share")
        self.record.metric("global_amax" + suffix, float(global_amax.float().max()), "value")

    def _check_reference(self, ref: Any, q: Any, x2d: Any) -> None:
        from benchmarks.harness import te_ops

        tol = TOLERANCE["nvfp4"]
        m, k = x2d.shape
        if q.data is not None:
            deq = te_ops.dequantize_reference(q)
            self.record.add(records.compare("dequantize_error", "rel_l2", relative_error(deq, x2d), tol))
            with self.optional("error metrics"):
                self.record.errors("dequantized_vs_input", error_metrics(deq, x2d))
                self._scale_health(q.scale[:m, : k // 16], q.global_amax_row)
        if q.data_t is not None:
            expected = ref._apply_rht(x2d.t().contiguous())
            deq = te_ops.dequantize_reference(q, columnwise=True)
            self.record.add(
                records.compare("dequantize_error_columnwise", "rel_l2", relative_error(deq, expected), tol)
            )
            with self.optional("error metrics"):
                self.record.errors("dequantized_columnwise_vs_input", error_metrics(deq, expected))
                if q.data is None:
                    self._scale_health(q.scale_t[:k, : m // 16], q.global_amax_col)

    def _prepare_native(self, x: Any, x2d: Any, variant: str) -> Prepared:
        import torch

        from benchmarks.harness import te_ops
        from benchmarks.harness.numerics import differing_buffers

        q = te_ops.quantizer(variant)
        out = q.make_empty(x.shape, dtype=torch.bfloat16, device="cuda")
        again = q.make_empty(x.shape, dtype=torch.bfloat16, device="cuda")
        with torch.no_grad():
            q.update_quantized(x, out)
            q.update_quantized(x, again)
        buffers = te_ops.inner_buffers(out)
        same = not differing_buffers(buffers, te_ops.inner_buffers(again))
        if variant != "nvfp4-sr":
            self.record.add(
                records.Check(
                    check="deterministic",
                    status="pass" if same else "fail_accuracy",
                    metric="bitwise_equal",
                    value=float(same),
                    tolerance=1.0,
                )
            )
        if variant != "nvfp4-sr":
            with self.optional("error metrics"):
                first = out.dequantize(dtype=torch.float32)
                repeat = again.dequantize(dtype=torch.float32)
                self.record.errors("repeat_vs_first", error_metrics(repeat, first))
        if variant in FP8_VARIANTS:
            deq = out.dequantize(dtype=torch.float32).reshape(x2d.shape)
            self.record.add(
                records.compare("dequantize_error", "rel_l2", relative_error(deq, x2d), TOLERANCE["fp8"])
            )
            with self.optional("error metrics"):
                self.record.errors("dequantized_vs_input", error_metrics(deq, x2d))
                self._fp8_scales(buffers)
        elif variant != "nvfp4-sr":
            self._check_native_vs_reference(variant, x2d, buffers)

        def run() -> dict[str, Any]:
            with torch.no_grad():
                q.update_quantized(x, out)
            return buffers

        if variant == "nvfp4-sr":  # the dequantized values, each within the tolerance of the input
            check = OutputCheck(2 * TOLERANCE["nvfp4-sr"], lambda _: out.dequantize(dtype=torch.float32))
        else:
            check = OutputCheck()
        return Prepared(fn=run, device="cuda", output_check=check)

    def _fp8_scales(self, buffers: dict[str, Any]) -> None:
        """FP8's inverse scales (float32, one per tensor or per block): the largest, times E4M3's largest
        value, is the amax the scale was set from (rounded down to a power of two where the recipe forces
        such scales), and the share of zero scales."""
        import torch

        scales = torch.cat([b.detach().float().reshape(-1) for n, b in buffers.items() if "scale_inv" in n])
        self.record.metric("global_amax", E4M3_MAX * float(scales.max()), "value")
        self.record.metric("scale_zero_share", float((scales == 0).float().mean()), "share")

    def _check_native_vs_reference(self, variant: str, x2d: Any, buffers: dict[str, Any]) -> None:
        """TE's own exactness test: native NVFP4 == NVFP4QuantizerRef, bit for bit."""
        from benchmarks.harness import te_ops
        from benchmarks.harness.numerics import bytes_equal

        ref = te_ops.reference_quantizer(variant).quantize(x2d)
        m, k = x2d.shape
        pairs = []
        if ref.data is not None:
            pairs += [
                ("rowwise_data", buffers["_rowwise_data"].reshape(m, k // 2), ref.data),
                ("rowwise_scale", buffers["_rowwise_scale_inv"][:m, : k // 16], ref.scale),
            ]
        if ref.data_t is not None:
            pairs += [
                ("columnwise_data", buffers["_columnwise_data"].reshape(k, m // 2), ref.data_t),
                ("columnwise_scale", buffers["_columnwise_scale_inv"][:k, : m // 16], ref.scale_t),
            ]
        mismatched = [name for name, native, expected in pairs if not bytes_equal(native, expected)]
        self.record.add(
            records.Check(
                check="native_vs_reference",
                status="fail_accuracy" if mismatched else "pass",
                metric="mismatched_buffers",
                value=float(len(mismatched)),
                tolerance=0.0,
                details={"mismatched": mismatched} if mismatched else None,
            )
        )


def torch_float32() -> Any:
    import torch

    return torch.float32

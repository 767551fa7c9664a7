"""GEMM: NVFP4, FP8 (current and block scaling) and BF16 at real shapes, on pre-quantized operands.

Seconds are the tracked series; TFLOP/s and the share of the device's measured ceiling for that
precision go into the case record's metrics (the same process, the same median).
"""

from __future__ import annotations

from typing import Any

from benchmarks.harness import records
from benchmarks.harness.case import Case, Prepared
from benchmarks.harness.numerics import error_metrics, relative_error
from benchmarks.harness.profiles import Profile, current_profile, parse_shape, selected_backends
from benchmarks.harness.timed_output import OutputCheck

BACKEND_OF = {
    "bf16": "te",
    "fp8-current": "te",
    "fp8-block": "te",
    "nvfp4": "te",
    "nvfp4-ref": "te-ref",
    "torch-ref": "torch-ref",
}
CEILING_OF = {
    "bf16": "bf16",
    "fp8-current": "fp8",
    "fp8-block": "fp8",
    "nvfp4": None,
    "nvfp4-ref": "fp32",
    "torch-ref": "fp32",
}
# normwise error of x @ w.T against FP32 on the unquantized inputs (standard normal)
TOLERANCE = {
    "bf16": 1e-2,
    "fp8-current": 0.08,
    "fp8-block": 0.08,
    "nvfp4": 0.25,
    "nvfp4-ref": 0.25,
    "torch-ref": 0.25,
}
NATIVE_VS_REFERENCE_TOLERANCE = 8e-3  # TE's test_nvfp4_gemm_exact
# On an H200 a BF16 8192^3 GEMM runs at its power limit, its SM clock moving between 1365 and 1545 MHz:
# medians of 100 samples (0.16 s) spread by 1.2-1.8 % (CV of 20), medians of 2 s of samples by 0.1-0.75 %
# (scripts/bench_harness.py, three lent machines)
GPU_SAMPLE_SECONDS = 2.0
_PROFILE = current_profile()


class Gemm(Case):
    param_names = ["recipe", "shape"]
    params = [
        [r for r in BACKEND_OF if BACKEND_OF[r] in selected_backends()],
        list(_PROFILE.gemm_shapes),
    ]
    op = "gemm"
    main_check = "vs_fp32"

    def labels(self, p: dict[str, Any]) -> dict[str, Any]:
        return {"backend": BACKEND_OF[p["recipe"]], "recipe": p["recipe"], "op": self.op, "rank": 2}

    def gate_key(self, p: dict[str, Any]) -> tuple[str, str]:
        backend = BACKEND_OF[p["recipe"]]
        return backend, p["recipe"] if backend == "te" else "nvfp4"

    def prepare(self, p: dict[str, Any], profile: Profile) -> Prepared:
        import torch

        from benchmarks.harness.ceilings import measured_ceiling

        m, n, k = parse_shape(p["shape"])
        recipe = p["recipe"]
        torch.manual_seed(0)
        device = profile.device
        x = torch.randn(m, k, dtype=torch.bfloat16, device=device)
        w = torch.randn(n, k, dtype=torch.bfloat16, device=device)
        if device == "cuda":
            torch.backends.cuda.matmul.allow_tf32 = False
        expected = x.float() @ w.float().t()
        fn = self._operands(recipe, x, w)
        out = fn()
        self.record.add(
            records.compare("vs_fp32", "rel_l2", relative_error(out, expected), TOLERANCE[recipe])
        )
        with self.optional("error metrics"):
            self.record.errors("output_vs_fp32", error_metrics(out, expected))
        del expected
        if recipe == "nvfp4":
            self._check_native_vs_reference(x, w, out)

        flops = 2.0 * m * n * k
        derived = {"tflops": (lambda s: flops / s / 1e12, "TFLOP/s")}
        kind = CEILING_OF[recipe]
        ceiling = measured_ceiling(kind, device) if kind else None
        if ceiling:
            self.record.metric(f"ceiling_{kind}_tflops", ceiling, "TFLOP/s")
            derived["share_of_ceiling"] = (lambda s: flops / s / 1e12 / ceiling, "fraction")
        return Prepared(
            fn=fn,
            device=device,
            derived=derived,
            output_check=OutputCheck(),
            sample_seconds=GPU_SAMPLE_SECONDS if device == "cuda" else None,
        )

    def _operands(self, recipe: str, x: Any, w: Any) -> Any:
        """Quantize once (outside the timing) and return the GEMM call."""
        if recipe == "torch-ref":
            from benchmarks import nvfp4_emulation as emu

            xq, wq = emu.quantize_nvfp4(x), emu.quantize_nvfp4(w, block_2d=True)
            return lambda: emu.gemm_nvfp4(xq, wq, out_dtype=x.dtype)
        from benchmarks.harness import te_ops

        if recipe == "bf16":
            return lambda: te_ops.gemm(w, x)
        if recipe == "nvfp4-ref":
            xq = te_ops.reference_quantizer("nvfp4-row").quantize(x)
            wq = te_ops.reference_quantizer("nvfp4-2d")
            wq.set_usage(rowwise=True, columnwise=False)
            wq = wq.quantize(w)
            return lambda: te_ops.gemm(wq, xq)
        if recipe == "nvfp4":
            xq = te_ops.quantizer("nvfp4-row")(x)
            wquant = te_ops.quantizer("nvfp4-2d")
            wquant.set_usage(rowwise=True, columnwise=False)
            wq = wquant(w)
            return lambda: te_ops.gemm(wq, xq)
        weight_variant = "fp8-block-2d" if recipe == "fp8-block" else recipe
        xq = te_ops.quantizer(recipe, rowwise=True, columnwise=False)(x)
        wq = te_ops.quantizer(weight_variant, rowwise=True, columnwise=False)(w)
        return lambda: te_ops.gemm(wq, xq)

    def _check_native_vs_reference(self, x: Any, w: Any, out: Any) -> None:
        ref = self._operands("nvfp4-ref", x, w)()
        with self.optional("error metrics"):
            self.record.errors("native_vs_reference", error_metrics(out, ref))
        self.record.add(
            records.compare(
                "native_vs_reference", "rel_l2", relative_error(out, ref), NATIVE_VS_REFERENCE_TOLERANCE
            )
        )

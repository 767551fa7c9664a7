"""The 16x16 random Hadamard transform on its own.

te: TE has no standalone RHT op in PyTorch; its RHT runs inside a column-wise NVFP4 quantize with
`with_rht`, so that is what is timed (native NVFP4: sm_100+). te-ref: NVFP4QuantizerRef._apply_rht
(a bf16 matmul). torch-ref: the project's emulation.
"""

from __future__ import annotations

from typing import Any

from benchmarks.harness import records
from benchmarks.harness.case import Case, Prepared
from benchmarks.harness.numerics import error_metrics, relative_error
from benchmarks.harness.profiles import Profile, current_profile, parse_shape, selected_backends
from benchmarks.harness.timed_output import OutputCheck

_PROFILE = current_profile()
# bf16 products: one rounding of the output
BF16_TOLERANCE = 1e-2


class Rht(Case):
    param_names = ["backend", "shape"]
    params = [list(selected_backends()), list(_PROFILE.rht_shapes)]
    op = "rht"
    main_check = "orthogonality"

    def labels(self, p: dict[str, Any]) -> dict[str, Any]:
        return {
            "backend": p["backend"],
            "recipe": "nvfp4",
            "rank": len(parse_shape(p["shape"])),
            "op": self.op,
        }

    def gate_key(self, p: dict[str, Any]) -> tuple[str, str]:
        return p["backend"], "nvfp4-rht"

    def prepare(self, p: dict[str, Any], profile: Profile) -> Prepared:
        import torch

        from benchmarks import nvfp4_emulation as emu

        torch.manual_seed(0)
        shape = parse_shape(p["shape"])
        x = torch.randn(shape, dtype=torch.bfloat16, device=profile.device)
        y = emu.apply_rht(x)
        # an orthonormal transform: norms kept, the inverse undoes it
        self.record.add(
            records.compare(
                "orthogonality",
                "rel_norm_change",
                abs(y.double().norm().item() / x.double().norm().item() - 1.0),
                BF16_TOLERANCE,
            )
        )
        self.record.add(
            records.compare(
                "inverse", "rel_l2", relative_error(emu.apply_rht(y, inverse=True), x), 2 * BF16_TOLERANCE
            )
        )
        with self.optional("error metrics"):
            self.record.errors("inverse_vs_input", error_metrics(emu.apply_rht(y, inverse=True), x))
        backend = p["backend"]
        if backend == "torch-ref":
            return Prepared(fn=lambda: emu.apply_rht(x), device=profile.device, output_check=OutputCheck())
        from benchmarks.harness import te_ops

        if backend == "te-ref":
            ref = te_ops.reference_quantizer("nvfp4-rht")
            theirs = ref._apply_rht(x)
            self.record.add(
                records.compare("reference_vs_emulation", "rel_l2", relative_error(theirs, y), BF16_TOLERANCE)
            )
            with self.optional("error metrics"):
                self.record.errors("reference_vs_emulation", error_metrics(theirs, y))
            return Prepared(fn=lambda: ref._apply_rht(x), device="cuda", output_check=OutputCheck())
        q = te_ops.quantizer("nvfp4-rht-col")
        out = q.make_empty(shape, dtype=torch.bfloat16, device="cuda")

        buffers = te_ops.inner_buffers(out)

        def run() -> dict[str, Any]:
            with torch.no_grad():
                q.update_quantized(x, out)
            return buffers

        return Prepared(fn=run, device="cuda", output_check=OutputCheck())

"""te.Linear forward+backward: recipes x input ranks 2D/3D/4D x eager / torch.compile modes.

The verdict of a compiled case is its parity with eager (TE's own compile test: output, dgrad and
wgrad bit for bit); an eager case is checked against FP32 on the unquantized operands. Compile time
and Dynamo graph breaks (TE's eager fallback under compile) go into the record's metrics.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from benchmarks.harness import records
from benchmarks.harness.case import Case, Prepared
from benchmarks.harness.linear_steps import fwd_bwd, timed_fwd_bwd
from benchmarks.harness.numerics import error_metrics, max_abs_difference, relative_error
from benchmarks.harness.params import invalid_combinations
from benchmarks.harness.profiles import Profile, current_profile, selected_backends, spread_over_rank
from benchmarks.harness.timed_output import OutputCheck

BACKEND_OF = {
    "bf16": "te",
    "fp8-delayed": "te",
    "fp8-current": "te",
    "fp8-block": "te",
    "mxfp8": "te",
    "nvfp4": "te",
    "nvfp4-ref": "te-ref",
    "torch-ref": "torch-ref",
}
# normwise error of output/dgrad/wgrad against FP32 on the unquantized operands
TOLERANCE = {
    "bf16": 1e-2,
    "fp8-delayed": 0.1,
    "fp8-current": 0.1,
    "fp8-block": 0.1,
    "mxfp8": 0.1,
    "nvfp4": 0.3,
    "nvfp4-ref": 0.3,
    "torch-ref": 0.3,
}
# recipes whose step is not the same to the bit from one call to the next
NONDETERMINISTIC_STEPS = ("fp8-delayed", "nvfp4")
_PROFILE = current_profile()


class LinearFwdBwd(Case):
    param_names = ["recipe", "rank", "mode"]
    params = [
        [
            r
            for r in BACKEND_OF
            if BACKEND_OF[r] in selected_backends() and (r != "torch-ref" or _PROFILE.linear_torch_ref_modes)
        ],
        list(_PROFILE.linear_ranks),
        list(_PROFILE.linear_modes),
    ]
    skip_params = invalid_combinations(
        params, lambda recipe, _rank, mode: recipe != "torch-ref" or mode in _PROFILE.linear_torch_ref_modes
    )
    op = "linear"
    timeout = 600

    def labels(self, p: dict[str, Any]) -> dict[str, Any]:
        return {
            "backend": BACKEND_OF[p["recipe"]],
            "recipe": p["recipe"],
            "mode": p["mode"],
            "rank": p["rank"],
            "op": self.op,
        }

    def gate_key(self, p: dict[str, Any]) -> tuple[str, str]:
        backend = BACKEND_OF[p["recipe"]]
        return backend, p["recipe"] if backend == "te" else "nvfp4"

    @property
    def main_check(self) -> str:  # type: ignore[override]
        return "compiled_vs_eager" if self._mode != "eager" else "vs_fp32"

    def setup(self, *values: Any) -> None:
        self._mode = dict(zip(self.param_names, values, strict=False))["mode"]
        super().setup(*values)

    def prepare(self, p: dict[str, Any], profile: Profile) -> Prepared:
        import torch

        recipe, mode = p["recipe"], p["mode"]
        in_f, out_f = profile.linear_in_out
        shape = spread_over_rank(profile.linear_tokens, in_f, p["rank"])
        device = profile.device
        torch.manual_seed(0)
        x = torch.randn(shape, dtype=torch.bfloat16, device=device)
        dy = torch.randn(*shape[:-1], out_f, dtype=torch.bfloat16, device=device)
        make_module, autocast = _builders(recipe, in_f, out_f, device)

        eager = make_module()
        forward_eager = _forward(eager, autocast)
        y, dx, dw = fwd_bwd(eager, forward_eager, x, dy)
        if mode == "eager":
            w = eager.weight.detach().float()
            self.record.add(
                records.compare(
                    "vs_fp32",
                    "rel_l2",
                    relative_error(y, x.float() @ w.t()),
                    TOLERANCE[recipe],
                    tensor="output",
                )
            )
            self.record.add(
                records.compare(
                    "dgrad_vs_fp32",
                    "rel_l2",
                    relative_error(dx, dy.float() @ w),
                    TOLERANCE[recipe],
                    tensor="dgrad",
                )
            )
            expected_dw = dy.reshape(-1, out_f).float().t() @ x.reshape(-1, in_f).float()
            with self.optional("error metrics"):
                self.record.errors("output_vs_fp32", error_metrics(y, x.float() @ w.t()))
                self.record.errors("dgrad_vs_fp32", error_metrics(dx, dy.float() @ w))
                self.record.errors("wgrad_vs_fp32", error_metrics(dw, expected_dw))
                # what the recipe costs against the plain bf16 matmul of the same operands
                self.record.errors("output_vs_bf16", error_metrics(y, x @ eager.weight.detach().t()))
            self.record.add(
                records.compare(
                    "wgrad_vs_fp32",
                    "rel_l2",
                    relative_error(dw, expected_dw),
                    TOLERANCE[recipe],
                    tensor="wgrad",
                )
            )
            return Prepared(
                fn=timed_fwd_bwd(eager, forward_eager, x, dy, cudagraphs=False),
                device=device,
                steps=True,
                output_check=timed_output_check(recipe),
            )

        from benchmarks.harness.compile_cost import CompileCost

        cost = CompileCost(device)
        compiled = make_module()
        with torch.no_grad():
            compiled.weight.copy_(eager.weight)
        forward_compiled = torch.compile(_forward(compiled, autocast), mode=mode, fullgraph=False)
        cudagraphs = mode == "reduce-overhead"
        with cost.first_call():
            yc, dxc, dwc = fwd_bwd(compiled, forward_compiled, x, dy, cudagraphs=cudagraphs)
        cost.write(self.record)
        diffs = {
            "output": max_abs_difference(yc, y),
            "dgrad": max_abs_difference(dxc, dx),
            "wgrad": max_abs_difference(dwc, dw),
        }
        with self.optional("error metrics"):
            for name, (got, want) in {"output": (yc, y), "dgrad": (dxc, dx), "wgrad": (dwc, dw)}.items():
                self.record.errors(f"compiled_{name}_vs_eager", error_metrics(got, want))
        worst = max(diffs.values(), key=lambda v: float("inf") if v != v else v)
        self.record.add(
            records.compare(
                "compiled_vs_eager",
                "max_abs_diff",
                worst,
                0.0,
                per_tensor=diffs,
                graph_break_reasons=cost.reasons(),
            )
        )
        return Prepared(
            fn=timed_fwd_bwd(compiled, forward_compiled, x, dy, cudagraphs=cudagraphs),
            device=device,
            steps=True,
            output_check=timed_output_check(recipe),
            reference=("eager", timed_fwd_bwd(eager, forward_eager, x, dy, cudagraphs=False)),
        )


def timed_output_check(recipe: str) -> OutputCheck:
    """Bit for bit, but where a step's gradients move by design: stochastic rounding of NVFP4's gradients,
    delayed scaling's amax history (each within twice the recipe's tolerance of the other)."""
    if recipe in NONDETERMINISTIC_STEPS:
        return OutputCheck(tolerance=2 * TOLERANCE[recipe])
    return OutputCheck()


def autocast_for(recipe: str) -> Callable[[], Any]:
    """The autocast context factory of a recipe: TE's autocast with the recipe, none for torch-ref."""
    if recipe == "torch-ref":
        return contextlib.nullcontext

    from benchmarks.harness import te_ops
    from benchmarks.harness.te_import import import_transformer_engine

    te = import_transformer_engine()
    te_recipe = te_ops.recipe(recipe)

    def autocast() -> Any:
        return te.autocast(enabled=te_recipe is not None, recipe=te_recipe)

    return autocast


def _builders(recipe: str, in_f: int, out_f: int, device: str) -> tuple[Any, Any]:
    """(make a fresh module, the autocast context factory) for a recipe."""
    import torch

    if recipe == "torch-ref":
        from benchmarks.harness.emulated_linear import EmulatedNVFP4Linear

        def make_emulated() -> Any:
            torch.manual_seed(1)
            return EmulatedNVFP4Linear(in_f, out_f, device=device, dtype=torch.bfloat16)

        return make_emulated, autocast_for(recipe)

    from benchmarks.harness.te_import import import_transformer_engine

    te = import_transformer_engine()

    def make_te() -> Any:
        torch.manual_seed(1)
        return te.Linear(in_f, out_f, bias=False, params_dtype=torch.bfloat16, device="cuda")

    return make_te, autocast_for(recipe)


def _forward(module: Any, autocast: Any) -> Any:
    def forward(inp: Any) -> Any:
        with autocast():
            return module(inp)

    return forward

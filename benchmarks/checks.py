"""General checks drawn from Transformer Engine's bug history (research/te_nvfp4.md §4), over every
quantizer and recipe they apply to. Each is a correctness check whose timing is a by-product (one-shot).

Determinism      the same input quantized twice gives the same bytes and amax (a race in an amax kernel).
OddShapes        shapes off the 16/32/128 grid: a clean error, or values that dequantize back to the
                 input (never a silently wrong result; a crash or a hang is the runner's error/timeout).
CpuOps           a quantized tensor moved to the CPU goes through the ops user code and
                 torch.testing.assert_close reach, each one a check (the `+ 0` RecursionError was one).
CompileSequence  te.Linear under torch.compile beyond one call: train -> eval -> train, and a 3-D input
                 whose sequence dimension is dynamic, seen at two lengths; each step against eager.
CompiledLayer    a whole te.LayerNormMLP or te.TransformerLayer compiled vs eager on a 3-D input, before
                 and after an update of its weights in place.
NdUpdate         a 3-D quantized tensor with both usages updated in place (`copy_`, `quantize_`) equals
                 a fresh quantize of the new values, buffer for buffer.
DcpRoundTrip     a te.Linear whose weight is quantized at init, saved and loaded through
                 torch.distributed.checkpoint (one process, `_extra_state` included): buffers bit for bit
                 and a forward pass equal (the CPU tensor support exists for this). Sharded with FSDP2
                 at world size 2, the same round trip is distributed.FsdpCheckpoint.
"""

from __future__ import annotations

import contextlib
import math
from typing import Any

from benchmarks.contracts import (
    TE_QUANTIZERS,
    TE_TENSOR_QUANTIZERS,
    _dequantize_or_unsupported,
    _te_tensor,
    quantizer_backend,
    quantizer_recipe,
)
from benchmarks.harness import records
from benchmarks.harness.case import Case, Prepared, Unsupported
from benchmarks.harness.compile_cost import CompileCost
from benchmarks.harness.cpu_ops import cpu_op_checks
from benchmarks.harness.dcp_round_trip import RECIPES as DCP_RECIPES
from benchmarks.harness.numerics import differing_buffers, error_metrics, relative_error
from benchmarks.harness.profiles import (
    Profile,
    current_profile,
    parse_shape,
    selected_backends,
    spread_over_rank,
)

_PROFILE = current_profile()
_TE = "te" in selected_backends()
_TORCH_REF = "torch-ref" in selected_backends()
TORCH_REF_QUANTIZERS = ["torch-ref", "torch-ref-rht", "torch-ref-2d"]
QUANTIZERS = (TE_QUANTIZERS if _TE else []) + (TORCH_REF_QUANTIZERS if _TORCH_REF else [])
# normwise dequantization error of a standard normal input
TOLERANCE = {"nvfp4": 0.15, "fp8": 0.04, "mxfp8": 0.04}
# rows x columns: on the grid, K off the 128 grid, M and K off the 32 and 16 grids
ODD_SHAPES = ["256x256", "256x272", "100x256", "128x130"]


def _tolerance(quantizer: str) -> float:
    return TOLERANCE[
        "nvfp4" if quantizer_recipe(quantizer) == "nvfp4" else "mxfp8" if quantizer == "mxfp8" else "fp8"
    ]


class _QuantizerCheck(Case):
    one_shot = True

    def labels(self, p: dict[str, Any]) -> dict[str, Any]:
        return {
            "backend": quantizer_backend(p["quantizer"]),
            "recipe": quantizer_recipe(p["quantizer"]),
            "variant": p["quantizer"],
            "op": self.op,
        }


def _device(quantizer: str, profile: Profile) -> str:
    return "cuda" if quantizer_backend(quantizer) == "te" else profile.device


def _quantize(quantizer: str, x: Any) -> tuple[dict[str, Any], Any]:
    """(inner buffers, dequantized values) of `x` quantized by `quantizer` (TE's native quantizer, or the
    emulation's row-wise, RHT column-wise or 16x16-block variant)."""
    import torch

    if quantizer_backend(quantizer) == "te":
        from benchmarks.harness import te_ops

        with torch.no_grad():
            q = te_ops.quantizer(quantizer)(x)
        return {n: b.clone() for n, b in te_ops.inner_buffers(q).items()}, q.dequantize().float()
    from benchmarks import nvfp4_emulation as emu

    if quantizer == "torch-ref-rht":
        q = emu.quantize_nvfp4_columnwise(x, rht=True)
        values = None  # column-wise after the RHT: not the input's values
    else:
        q = emu.quantize_nvfp4(x, block_2d=quantizer == "torch-ref-2d")
        values = emu.dequantize_nvfp4(q, torch.float32)
    return {"data": q.data, "scales": q.scales, "global_amax": q.global_amax}, values


class Determinism(_QuantizerCheck):
    param_names = ["quantizer"]
    params = [QUANTIZERS]
    op = "determinism"
    main_check = "determinism"

    def prepare(self, p: dict[str, Any], profile: Profile) -> Prepared:
        import torch

        quantizer = p["quantizer"]
        device = _device(quantizer, profile)
        torch.manual_seed(0)
        x = torch.randn(profile.contract_shape, dtype=torch.bfloat16, device=device)
        first, first_values = _quantize(quantizer, x)
        second, second_values = _quantize(quantizer, x)
        differing = differing_buffers(first, second)
        if first_values is not None:
            with self.optional("error metrics"):
                self.record.errors("repeat_vs_first", error_metrics(second_values, first_values))
        self.record.add(
            records.Check(
                check="determinism",
                status="fail_accuracy" if differing else "pass",
                metric="differing_buffers",
                value=float(len(differing)),
                tolerance=0.0,
                details={"differing": differing} if differing else None,
            )
        )
        return Prepared(fn=lambda: _quantize(quantizer, x), device=device)


class OddShapes(_QuantizerCheck):
    param_names = ["quantizer", "shape"]
    params = [[q for q in QUANTIZERS if q != "torch-ref-rht"], ODD_SHAPES]
    op = "odd_shape"
    main_check = "odd_shape"

    def labels(self, p: dict[str, Any]) -> dict[str, Any]:
        _rows, cols = parse_shape(p["shape"])
        return {**super().labels(p), "rank": 2, "shape": p["shape"], "k_mod_128": cols % 128}

    def prepare(self, p: dict[str, Any], profile: Profile) -> Prepared:
        import torch

        quantizer, shape = p["quantizer"], parse_shape(p["shape"])
        device = _device(quantizer, profile)
        torch.manual_seed(0)
        x = torch.randn(shape, dtype=torch.bfloat16, device=device)
        try:
            _, values = _quantize(quantizer, x)
        except (ValueError, RuntimeError, AssertionError, TypeError, NotImplementedError) as exc:
            self.record.add(
                records.Check(
                    check="odd_shape",
                    status="pass",
                    details={"refused": f"{type(exc).__name__}: {exc}"[:500]},
                )
            )
            return Prepared(fn=lambda: None, device="cpu")
        if tuple(values.shape) != tuple(shape):
            self.record.add(
                records.Check(
                    check="odd_shape",
                    status="fail_accuracy",
                    metric="shape",
                    tolerance=0.0,
                    message=f"quantized {tuple(shape)}, dequantized to {tuple(values.shape)}",
                )
            )
        else:
            self.record.add(
                records.compare(
                    "odd_shape", "rel_l2", relative_error(values, x.float()), _tolerance(quantizer)
                )
            )
        return Prepared(fn=lambda: _quantize(quantizer, x), device=device)


if _TE:

    class CpuOps(_QuantizerCheck):
        param_names = ["quantizer"]
        params = [TE_TENSOR_QUANTIZERS]
        op = "cpu_ops"
        main_check = "cpu_add"

        def gate_key(self, p: dict[str, Any]) -> tuple[str, str]:
            return "te", "bf16"  # built with make_empty where the format's kernels are missing

        def prepare(self, p: dict[str, Any], profile: Profile) -> Prepared:
            import torch

            shape = profile.contract_shape
            torch.manual_seed(0)
            q = _te_tensor(p["quantizer"], shape, torch.randn(shape, dtype=torch.bfloat16, device="cuda"))
            expected = _dequantize_or_unsupported(p["quantizer"], q)
            for check in cpu_op_checks(q.cpu(), expected):
                self.record.add(check)
            return Prepared(fn=lambda: q.cpu(), device="cpu")

    class NdUpdate(_QuantizerCheck):
        param_names = ["quantizer"]
        params = [TE_TENSOR_QUANTIZERS]
        op = "nd_update"
        main_check = "copy_"

        def prepare(self, p: dict[str, Any], profile: Profile) -> Prepared:
            import torch

            from benchmarks.harness import te_ops

            shape = spread_over_rank(*profile.contract_shape, 3)
            torch.manual_seed(0)
            old, new = (torch.randn(shape, dtype=torch.bfloat16, device="cuda") for _ in range(2))
            quantizer = te_ops.quantizer(p["quantizer"])
            with torch.no_grad():
                expected = te_ops.valid_buffers(quantizer(new))
                updates = {"copy_": lambda t: t.copy_(new), "quantize_": lambda t: t.quantize_(new)}
                for name, update in updates.items():
                    tensor = quantizer(old)
                    update(tensor)
                    differing = differing_buffers(te_ops.valid_buffers(tensor), expected)
                    self.record.add(
                        records.Check(
                            check=name,
                            status="fail_accuracy" if differing else "pass",
                            metric="differing_buffers",
                            value=float(len(differing)),
                            tolerance=0.0,
                            details={"differing": differing} if differing else None,
                        )
                    )
            target = quantizer(old)
            return Prepared(fn=lambda: target.quantize_(new), device="cuda")

    class DcpRoundTrip(Case):
        param_names = ["recipe"]
        params = [list(DCP_RECIPES)]
        op = "dcp_round_trip"
        main_check = "dcp_save"
        one_shot = True

        def labels(self, p: dict[str, Any]) -> dict[str, Any]:
            return {"backend": "te", "recipe": p["recipe"], "op": self.op}

        def prepare(self, p: dict[str, Any], profile: Profile) -> Prepared:
            import tempfile
            from pathlib import Path

            import torch

            from benchmarks.harness import te_ops
            from benchmarks.harness.dcp_round_trip import dcp_round_trip

            te, recipe = te_ops.loaded().te, te_ops.recipe(p["recipe"])
            in_f, out_f = profile.linear_in_out

            def make(seed: int) -> Any:
                torch.manual_seed(seed)
                with te.quantized_model_init(enabled=True, recipe=recipe):
                    return te.Linear(in_f, out_f, bias=False, params_dtype=torch.bfloat16, device="cuda")

            def buffers(module: Any) -> dict[str, Any]:
                found = {f"weight.{n}": b for n, b in te_ops.valid_buffers(module.weight).items()}
                extra = module.get_extra_state()
                if isinstance(extra, torch.Tensor):
                    found["_extra_state"] = extra
                return found

            torch.manual_seed(0)
            shape = spread_over_rank(profile.linear_tokens, in_f, 3)
            x = torch.randn(shape, dtype=torch.bfloat16, device="cuda")

            def forward(module: Any) -> Any:
                with torch.no_grad(), te.autocast(enabled=True, recipe=recipe):
                    return module(x).float()

            original = make(1)
            forward(original)  # a step, so that the quantization state (amax history, scales) is not blank
            with tempfile.TemporaryDirectory() as folder:
                for check in dcp_round_trip(original, make(2), Path(folder), buffers, forward):
                    self.record.add(check)
            return Prepared(fn=lambda: forward(original), device="cuda")


LINEAR_RECIPES = (["bf16", "fp8-delayed", "fp8-current", "fp8-block", "mxfp8", "nvfp4"] if _TE else []) + (
    ["torch-ref"] if _TORCH_REF else []
)
SEQUENCES = ["train-eval-train", "dynamic-sequence"]


class _CompiledVsEager(Case):
    """A recipe's module compiled (default mode) against eager on a 3-D input; params: recipe, then what
    else the case varies, labelled by its name."""

    main_check = "compiled_vs_eager"
    one_shot = True
    timeout = 600

    def labels(self, p: dict[str, Any]) -> dict[str, Any]:
        backend = "torch-ref" if p["recipe"] == "torch-ref" else "te"
        varied = self.param_names[1]
        # no mode or rank label: the compile-vs-eager grid is LinearFwdBwd's
        return {
            "backend": backend,
            "recipe": p["recipe"],
            "compile_mode": "default",
            "input_rank": 3,
            varied: p[varied],
            "op": self.op,
        }

    def gate_key(self, p: dict[str, Any]) -> tuple[str, str]:
        return ("torch-ref", "nvfp4") if p["recipe"] == "torch-ref" else ("te", p["recipe"])


class CompileSequence(_CompiledVsEager):
    param_names = ["recipe", "sequence"]
    params = [LINEAR_RECIPES, SEQUENCES]
    op = "linear_compile_sequence"

    def prepare(self, p: dict[str, Any], profile: Profile) -> Prepared:
        import torch

        from benchmarks.linear import _builders, _forward

        in_f, out_f = profile.linear_in_out
        device = profile.device
        make_module, autocast = _builders(p["recipe"], in_f, out_f, device)
        eager, compiled = make_module(), make_module()
        with torch.no_grad():
            compiled.weight.copy_(eager.weight)
        cost = CompileCost(device)
        forward_eager = _forward(eager, autocast)
        forward_compiled = torch.compile(_forward(compiled, autocast), mode="default")
        steps = _steps(p["sequence"], profile, device)
        for i, (name, step) in enumerate(steps):
            with cost.first_call() if i == 0 else contextlib.nullcontext():
                got = step(compiled, forward_compiled)
            want = step(eager, forward_eager)
            worst = max(_max_difference(a, b) for a, b in zip(got, want, strict=True))
            self.record.add(records.compare(f"compiled_vs_eager_{name}", "max_abs_diff", worst, 0.0))
        cost.write(self.record)
        last = steps[-1][1]
        return Prepared(fn=lambda: last(compiled, forward_compiled), device=device)


def _max_difference(a: Any, b: Any) -> float:
    from benchmarks.harness.numerics import max_abs_difference

    return max_abs_difference(a, b) if a.shape == b.shape else math.inf


def _steps(sequence: str, profile: Profile, device: str) -> list[tuple[str, Any]]:
    """Named steps, each (module, forward) -> tensors to compare between compiled and eager."""
    import torch

    from benchmarks.harness.linear_steps import fwd_bwd

    in_f, out_f = profile.linear_in_out
    tokens = profile.linear_tokens

    def inputs(seq: int) -> tuple[Any, Any]:
        torch.manual_seed(seq)
        x = torch.randn(2, seq, in_f, dtype=torch.bfloat16, device=device)
        return x, torch.randn(2, seq, out_f, dtype=torch.bfloat16, device=device)

    def train(seq: int, dynamic: bool = False) -> Any:
        def step(module: Any, forward: Any) -> tuple[Any, ...]:
            module.train()
            x, dy = inputs(seq)
            if dynamic:
                torch._dynamo.mark_dynamic(x, 1)
            return fwd_bwd(module, forward, x, dy)

        return step

    def evaluate(seq: int) -> Any:
        def step(module: Any, forward: Any) -> tuple[Any, ...]:
            module.eval()
            with torch.no_grad():
                out = forward(inputs(seq)[0]).detach().clone()
            module.train()
            return (out,)

        return step

    half = tokens // 2
    if sequence == "train-eval-train":
        return [("train", train(half)), ("eval", evaluate(half)), ("train_again", train(half))]
    longer = half + max(16, half // 2) // 16 * 16
    return [("first_length", train(half, dynamic=True)), ("second_length", train(longer, dynamic=True))]


LAYERS = ["LayerNormMLP", "TransformerLayer"]
# normwise, per tensor: inductor may round a layer's bf16 elementwise ops and reductions other than eager
# does (a bf16 LayerNorm's weight gradients by ~1e-2); a wrong path reads far more (a stale weight: 0.67)
LAYER_TOLERANCE = 0.02


class CompiledLayer(_CompiledVsEager):
    """A whole layer compiled vs eager on a (batch, seq, hidden) input: a step, an update of the weights in
    place (as an optimizer step or a loaded checkpoint does), another step. Output, input gradient and every
    weight gradient within LAYER_TOLERANCE of eager's; the 3-D compile bug only surfaced end to end."""

    param_names = ["recipe", "layer"]
    params = [LINEAR_RECIPES, LAYERS]
    op = "layer_compile"

    def prepare(self, p: dict[str, Any], profile: Profile) -> Prepared:
        import torch

        make_layer, autocast = _layer_builders(p["recipe"], p["layer"], profile)
        eager, compiled = make_layer(), make_layer()
        compiled.load_state_dict(eager.state_dict())
        cost = CompileCost(profile.device)
        compiled_forward = torch.compile(compiled, mode="default")
        batch, seq, hidden = _layer_input_shape(profile)
        torch.manual_seed(0)
        x = torch.randn(batch, seq, hidden, dtype=torch.bfloat16, device=profile.device)
        dy = torch.randn_like(x)

        def step(module: Any, forward: Any) -> dict[str, Any]:
            inp = x.detach().clone().requires_grad_(True)
            module.zero_grad(set_to_none=True)
            with autocast():
                out = forward(inp)
            out.backward(dy)
            grads = {f"grad_{name}": w.grad for name, w in module.named_parameters() if w.grad is not None}
            return {"output": out.detach(), "grad_input": inp.grad, **grads}

        for name in ("step", "after_update"):
            if name == "after_update":
                _update_in_place(eager, compiled)
            with cost.first_call() if name == "step" else contextlib.nullcontext():
                got = step(compiled, compiled_forward)
            want = step(eager, eager)
            if got.keys() != want.keys():
                raise AssertionError(
                    f"compiled and eager gradients differ in which weights they reach: "
                    f"{sorted(got.keys() ^ want.keys())}"
                )
            errors = {
                k: relative_error(got[k], want[k]) if got[k].shape == want[k].shape else math.inf
                for k in want
            }
            worst = max(errors, key=lambda k: errors[k])
            exact = [k for k in want if _max_difference(got[k], want[k]) == 0]
            self.record.add(
                records.compare(
                    f"compiled_vs_eager_{name}",
                    "relative_error",
                    errors[worst],
                    LAYER_TOLERANCE,
                    worst=worst,
                    bit_for_bit=len(exact),
                    tensors=len(want),
                )
            )
        cost.write(self.record)
        return Prepared(fn=lambda: step(compiled, compiled_forward), device=profile.device)


def _layer_input_shape(profile: Profile) -> tuple[int, int, int]:
    hidden = min(profile.linear_in_out[0], 1024)
    return 2, min(profile.linear_tokens, 2048) // 2, hidden


def _layer_builders(recipe: str, layer: str, profile: Profile) -> tuple[Any, Any]:
    """(make a fresh layer, the autocast context factory)."""
    import torch

    from benchmarks.linear import autocast_for

    hidden = _layer_input_shape(profile)[2]
    if recipe == "torch-ref":
        if layer != "LayerNormMLP":
            raise Unsupported(f"the torch-ref backend emulates te.LayerNormMLP only, not te.{layer}")
        from benchmarks.harness.emulated_linear import EmulatedNVFP4LayerNormMLP

        def make_emulated() -> Any:
            torch.manual_seed(1)
            return EmulatedNVFP4LayerNormMLP(hidden, 4 * hidden, profile.device, torch.bfloat16)

        return make_emulated, autocast_for(recipe)

    from benchmarks.harness.te_import import import_transformer_engine

    te = import_transformer_engine()

    def make_te() -> Any:
        torch.manual_seed(1)
        common = {"params_dtype": torch.bfloat16, "device": "cuda"}
        if layer == "LayerNormMLP":
            return te.LayerNormMLP(hidden, 4 * hidden, bias=False, **common)
        return te.TransformerLayer(
            hidden,
            4 * hidden,
            max(hidden // 64, 1),
            hidden_dropout=0.0,
            attention_dropout=0.0,
            self_attn_mask_type="causal",
            attn_input_format="bshd",
            **common,
        )

    return make_te, autocast_for(recipe)


def _update_in_place(*layers: Any) -> None:
    """The same update of every weight of each layer (layers made alike), a tenth of its spread."""
    import torch

    for layer in layers:
        torch.manual_seed(2)
        with torch.no_grad():
            for w in layer.parameters():
                w.add_(torch.randn_like(w) * (0.1 * w.float().std().nan_to_num(0.0).item() + 0.01))


_KEPT = {
    "Determinism": bool(QUANTIZERS),
    "OddShapes": bool(QUANTIZERS),
    "CpuOps": _TE,
    "NdUpdate": _TE,
    "DcpRoundTrip": _TE,
    "CompileSequence": bool(LINEAR_RECIPES),
    "CompiledLayer": bool(LINEAR_RECIPES),
}
for _name, _kept in _KEPT.items():  # asv discovers the classes left in the module
    if _name in globals() and (not _kept or _name not in _PROFILE.general_checks):
        del globals()[_name]

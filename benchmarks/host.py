"""Host overhead at small token counts (1 to 64: decode steps and small micro-batches), where TE's Python
and launch work rather than the device decide a call's time: te.Linear forward+backward, quantize, and
a te.TransformerLayer forward+backward (torch-ref: the project's emulated te.Linear, NVFP4 quantize and
emulated te.LayerNormMLP, so that a CPU runs the suite too).

Every case of every suite records the host's figures (`cpu_seconds`, `launches_per_call`,
`syncs_per_call`, docs/records.md); here they are the point. Quantized recipes need 16 tokens or more:
TE's FP8 and FP4 GEMMs and the column-wise (transposed) quantization take rows in multiples of 16, and TE
refuses fewer, so those recipes run at the profile's token counts that are multiples of 16.
"""

from __future__ import annotations

from typing import Any

from benchmarks.harness.case import Case, Prepared
from benchmarks.harness.params import invalid_combinations
from benchmarks.harness.profiles import Profile, current_profile, selected_backends
from benchmarks.harness.timed_output import OutputCheck

BACKEND_OF = {"bf16": "te", "fp8-current": "te", "nvfp4": "te", "torch-ref": "torch-ref"}
OPS = ["linear", "quantize", "layer"]
# rows a quantized GEMM or a column-wise quantize takes in multiples of
QUANTIZED_ROWS = 16
# a layer's attention backward may accumulate in any order (atomics): its step within this normwise error
LAYER_STEP_TOLERANCE = 0.02
_PROFILE = current_profile()


def _is_case(recipe: str, op: str, tokens: int) -> bool:
    if recipe == "bf16":
        return op != "quantize"
    return tokens % QUANTIZED_ROWS == 0


class HostOverhead(Case):
    param_names = ["recipe", "op", "tokens"]
    params = [
        [r for r in BACKEND_OF if BACKEND_OF[r] in selected_backends()],
        OPS,
        list(_PROFILE.host_tokens),
    ]
    skip_params = invalid_combinations(params, _is_case)
    op = "host"

    def labels(self, p: dict[str, Any]) -> dict[str, Any]:
        backend = BACKEND_OF[p["recipe"]]
        labels = {"backend": backend, "recipe": p["recipe"], "op": f"host_{p['op']}", "tokens": p["tokens"]}
        if p["op"] == "layer":
            labels["layer"] = _layer_name(backend)
        return labels

    def gate_key(self, p: dict[str, Any]) -> tuple[str, str]:
        backend = BACKEND_OF[p["recipe"]]
        return backend, p["recipe"] if backend == "te" else "nvfp4"

    def prepare(self, p: dict[str, Any], profile: Profile) -> Prepared:
        import torch

        recipe, op, tokens = p["recipe"], p["op"], p["tokens"]
        hidden, device = profile.host_hidden, profile.device
        torch.manual_seed(0)
        x = torch.randn(tokens, hidden, dtype=torch.bfloat16, device=device)
        if op == "quantize":
            fn = _quantize(recipe, x)
            check = OutputCheck()
        elif op == "linear":
            fn = _linear_step(recipe, x, device)
            check = OutputCheck(2 * 0.3) if recipe == "nvfp4" else OutputCheck()
        else:
            fn = _layer_step(recipe, x, device)
            check = OutputCheck(LAYER_STEP_TOLERANCE)
        fn()  # a first call: an error here is the case's verdict
        return Prepared(fn=fn, device=device, output_check=check)


def _layer_name(backend: str) -> str:
    return "LayerNormMLP" if backend == "torch-ref" else "TransformerLayer"


def _quantize(recipe: str, x: Any) -> Any:
    if recipe == "torch-ref":
        from benchmarks.quantize import _emulated_quantize

        return lambda: _emulated_quantize(x, "nvfp4-both", None)
    import torch

    from benchmarks.harness import te_ops

    quantizer = te_ops.quantizer(recipe)

    def quantize() -> dict[str, Any]:
        with torch.no_grad():
            return te_ops.inner_buffers(quantizer.quantize(x))

    return quantize


def _linear_step(recipe: str, x: Any, device: str) -> Any:
    import torch

    from benchmarks.harness.linear_steps import timed_fwd_bwd
    from benchmarks.linear import _builders, _forward

    hidden = x.shape[-1]
    make_module, autocast = _builders(recipe, hidden, hidden, device)
    module = make_module()
    dy = torch.randn_like(x)
    return timed_fwd_bwd(module, _forward(module, autocast), x, dy, cudagraphs=False)


def _layer_step(recipe: str, x: Any, device: str) -> Any:
    import torch

    from benchmarks.linear import autocast_for

    hidden = x.shape[-1]
    torch.manual_seed(1)
    if recipe == "torch-ref":
        from benchmarks.harness.emulated_linear import EmulatedNVFP4LayerNormMLP

        layer = EmulatedNVFP4LayerNormMLP(hidden, 4 * hidden, device, torch.bfloat16)
        inp = x.detach().clone().requires_grad_(True)
    else:
        from benchmarks.harness.te_import import import_transformer_engine

        te = import_transformer_engine()
        layer = te.TransformerLayer(
            hidden,
            4 * hidden,
            max(hidden // 128, 1),
            hidden_dropout=0.0,
            attention_dropout=0.0,
            self_attn_mask_type="causal",
            attn_input_format="sbhd",
            params_dtype=torch.bfloat16,
            device="cuda",
        )
        inp = x.detach().clone().unsqueeze(1).requires_grad_(True)  # (seq, batch 1, hidden)
    autocast = autocast_for(recipe)
    dy = torch.randn_like(inp)

    def step() -> list[Any]:
        layer.zero_grad(set_to_none=True)
        inp.grad = None
        with autocast():
            out = layer(inp)
        out.backward(dy)
        return [inp.grad, *(w.grad for w in layer.parameters() if w.grad is not None)]

    return step

"""TE's CPU offload of activations: the GPU bytes a stack of te.Linear layers, or of te.TransformerLayers,
keeps for its backward, with and without offload, and the gradients with offload against those without:
bit for bit where the layers repeat their own gradients bit for bit, else within what a second plain
backward differs by (`plain_repeat_max_abs_diff`).

The saving TE promises (`get_cpu_offload_context`: activations of all layers but the last moved to the
host during the forward) is a number users plan around; an offload that stops releasing GPU memory, or
keeps a copy on both sides, changes it without changing any value. The timed step is the offloaded
forward+backward, so the step memory of every GPU case (a leak slope) covers offload too.
"""

from __future__ import annotations

from typing import Any

from benchmarks.harness import records
from benchmarks.harness.case import Case, Prepared, Unsupported
from benchmarks.harness.numerics import error_metrics, max_abs_difference
from benchmarks.harness.profiles import Profile, selected_backends

LAYERS = 4
HEAD_DIM = 64
SEQUENCES = 4  # the TransformerLayer input: the linear suite's tokens as 4 sequences
RECIPES = ["bf16", "fp8-current"]


def offload_case(case: Case, recipe: str, profile: Profile, build: Any) -> Prepared:
    """The bytes `build(te, hidden)`'s layers keep for their backward with and without offload, their
    gradients with offload against those without; the timed step is the offloaded forward+backward.
    `build` returns (layers, input shape)."""
    import torch

    from benchmarks.harness.te_import import import_transformer_engine
    from benchmarks.linear import autocast_for

    te = import_transformer_engine()
    offload_context = getattr(te, "get_cpu_offload_context", None)
    if offload_context is None:
        raise Unsupported("this Transformer Engine has no get_cpu_offload_context")
    autocast = autocast_for(recipe)
    hidden = profile.linear_in_out[0]
    torch.manual_seed(1)
    layers, shape = build(te, hidden, profile.linear_tokens)
    torch.manual_seed(0)
    x = torch.randn(*shape, dtype=torch.bfloat16, device="cuda")
    dy = torch.randn_like(x)
    parameters = [p for layer in layers for p in layer.parameters()]

    def forward(inp: Any, offloaded: bool) -> Any:
        context, sync = offload_context(enabled=offloaded, num_layers=LAYERS - 1, model_layers=LAYERS)
        for layer in layers:
            with context, autocast():
                inp = layer(inp)
            inp = sync(inp)
        return inp

    def activations_and_grads(offloaded: bool) -> tuple[int, list[Any]]:
        for parameter in parameters:
            parameter.grad = None
        inp = x.detach().clone().requires_grad_(True)
        torch.cuda.synchronize()
        before = torch.cuda.memory_allocated()
        out = forward(inp, offloaded)
        torch.cuda.synchronize()
        held = torch.cuda.memory_allocated() - before
        out.backward(dy)
        torch.cuda.synchronize()
        assert inp.grad is not None
        grads = [inp.grad.detach().clone()] + [
            p.grad.detach().clone() for p in parameters if p.grad is not None
        ]
        return held, grads

    activations_and_grads(True)  # warm: the offload's pinned buffers and streams
    plain, plain_grads = activations_and_grads(False)
    _, plain_again = activations_and_grads(False)
    offloaded, offloaded_grads = activations_and_grads(True)
    case.record.metric("activation_bytes", plain, "bytes")
    case.record.metric("activation_bytes_offloaded", offloaded, "bytes")
    if plain > 0:
        case.record.metric("offload_saving", 1 - offloaded / plain, "fraction")
    worst = max(max_abs_difference(a, b) for a, b in zip(offloaded_grads, plain_grads, strict=True))
    # what the layers do on their own from one backward to the next: 0 where they are deterministic
    repeat = max(max_abs_difference(a, b) for a, b in zip(plain_again, plain_grads, strict=True))
    with case.optional("error metrics"):
        case.record.errors("offloaded_dgrad_vs_plain", error_metrics(offloaded_grads[0], plain_grads[0]))
        case.record.errors("offloaded_wgrad_vs_plain", error_metrics(offloaded_grads[1], plain_grads[1]))
    case.record.metric("plain_repeat_max_abs_diff", repeat, records.ERROR_UNITS["max_abs"])
    case.record.add(records.compare("offload_gradients", "max_abs_diff", worst, repeat))

    inp = x.detach().clone().requires_grad_(True)

    def step() -> None:
        for parameter in parameters:
            parameter.grad = None
        inp.grad = None
        forward(inp, True).backward(dy)

    return Prepared(fn=step, device="cuda", steps=True)


def linear_stack(te: Any, hidden: int, tokens: int) -> tuple[list[Any], tuple[int, ...]]:
    import torch

    layers = [
        te.Linear(hidden, hidden, bias=False, params_dtype=torch.bfloat16, device="cuda")
        for _ in range(LAYERS)
    ]
    return layers, (tokens, hidden)


def transformer_stack(te: Any, hidden: int, tokens: int) -> tuple[list[Any], tuple[int, ...]]:
    """TransformerLayers of the linear suite's hidden size, [sequence, batch, hidden] input (TE's default)."""
    import torch

    from benchmarks.harness.te_import import keep_attention_deterministic

    keep_attention_deterministic()

    layers = [
        te.TransformerLayer(
            hidden,
            4 * hidden,
            max(1, hidden // HEAD_DIM),
            hidden_dropout=0.0,
            attention_dropout=0.0,
            params_dtype=torch.bfloat16,
            device="cuda",
        )
        for _ in range(LAYERS)
    ]
    return layers, (max(1, tokens // SEQUENCES), SEQUENCES, hidden)


if "te" in selected_backends():

    class CpuOffload(Case):
        param_names = ["recipe"]
        params = [RECIPES]
        op = "cpu_offload"
        main_check = "offload_gradients"

        def labels(self, p: dict[str, Any]) -> dict[str, Any]:
            return {"backend": "te", "recipe": p["recipe"], "op": self.op, "rank": 2}

        def prepare(self, p: dict[str, Any], profile: Profile) -> Prepared:
            return offload_case(self, p["recipe"], profile, linear_stack)

    class CpuOffloadTransformerLayer(Case):
        """The same with four te.TransformerLayers: attention's and the MLP's activations offloaded too."""

        param_names = ["recipe"]
        params = [RECIPES]
        op = "cpu_offload"
        main_check = "offload_gradients"

        def labels(self, p: dict[str, Any]) -> dict[str, Any]:
            return {"backend": "te", "recipe": p["recipe"], "op": self.op, "rank": 3}

        def prepare(self, p: dict[str, Any], profile: Profile) -> Prepared:
            return offload_case(self, p["recipe"], profile, transformer_stack)

"""How the training suite's model runs one micro-batch to its loss: eager, compiled or graphed.

- `eager`: the model as it is, the layers under TE's autocast with the case's recipe (te backend).
- `compiled`: the whole micro-batch (embedding, layers, head, loss) through `torch.compile`'s default mode.
- `graphed`: the layers captured as CUDA graphs (`te.make_graphed_callables`; plain PyTorch's
  `torch.cuda.make_graphed_callables` on the torch backend), the embedding, head and loss eager. A capture
  that fails raises here: the case files it under `graph_capture`.

FP8 weight caching (`is_first_microbatch`: a weight is quantized on a step's first micro-batch and reused by
the others) is on for the recipes whose weights TE caches, in every execution, so that graphed and eager of
one recipe compute the same thing.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Callable
from typing import Any

import torch

from benchmarks.harness.gpt import Gpt
from benchmarks.harness.profiles import TrainingShape

EXECUTIONS = ("eager", "compiled", "graphed")
WEIGHT_CACHING = ("fp8-delayed", "fp8-current")

# (token ids [micro_batch, seq_len + 1], is this the step's first micro-batch) -> the mean loss
MicroBatchLoss = Callable[[torch.Tensor, bool], torch.Tensor]


def weight_caching(backend: str, recipe: str) -> bool:
    return backend == "te" and recipe in WEIGHT_CACHING


def micro_batch_loss(
    model: Gpt, backend: str, recipe: str, execution: str, shape: TrainingShape, device: str
) -> MicroBatchLoss:
    if execution not in EXECUTIONS:
        raise ValueError(f"unknown execution {execution!r}; known: {', '.join(EXECUTIONS)}")
    autocast = _autocast(backend, recipe)
    caching = weight_caching(backend, recipe)
    layers: Callable[..., torch.Tensor] = model.layers
    if execution == "graphed":
        sample = torch.randn(
            shape.seq_len, shape.micro_batch, shape.hidden, dtype=model.embedding.weight.dtype, device=device
        ).requires_grad_(True)
        layers = capture(model.layers, backend, recipe, sample, caching)

    def loss(tokens: torch.Tensor, first: bool) -> torch.Tensor:
        hidden = model.embed(tokens[:, :-1])
        with autocast():
            hidden = layers(hidden, **({"is_first_microbatch": first} if caching else {}))
        logits = model.logits(hidden).float()
        return torch.nn.functional.cross_entropy(
            logits.reshape(-1, logits.shape[-1]), tokens[:, 1:].t().reshape(-1)
        )

    if execution == "compiled":
        return torch.compile(loss)
    return loss


def capture(layers: torch.nn.Module, backend: str, recipe: str, sample: torch.Tensor, caching: bool) -> Any:
    """The layers as CUDA graphs (forward and backward), captured on `sample`."""
    if backend != "te":
        return torch.cuda.make_graphed_callables(layers, (sample,))
    from benchmarks.harness import te_ops
    from benchmarks.harness.te_import import import_transformer_engine

    make = import_transformer_engine().make_graphed_callables
    return make(layers, (sample,), **graph_arguments(make, recipe != "bf16", te_ops.recipe(recipe), caching))


def graph_arguments(make: Callable[..., Any], enabled: bool, recipe: Any, caching: bool) -> dict[str, Any]:
    """make_graphed_callables' recipe arguments under this release's names: `enabled`, `recipe`,
    `cache_quantized_params` since TE 2.9; `fp8_enabled`, `fp8_recipe`, `fp8_weight_caching` before."""
    if "cache_quantized_params" in inspect.signature(make).parameters:
        return {"enabled": enabled, "recipe": recipe, "cache_quantized_params": caching}
    return {"fp8_enabled": enabled, "fp8_recipe": recipe, "fp8_weight_caching": caching}


def _autocast(backend: str, recipe: str) -> Callable[[], Any]:
    if backend != "te":
        return contextlib.nullcontext
    from benchmarks.linear import autocast_for

    return autocast_for(recipe)

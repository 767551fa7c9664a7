"""Forward+backward steps of a linear layer, shared by the single-process and distributed suites."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def fwd_bwd(
    module: Any, forward: Callable[[Any], Any], x: Any, dy: Any, cudagraphs: bool = False
) -> tuple[Any, Any, Any]:
    """One forward+backward from fresh leaves: (output, dgrad, wgrad), detached copies."""
    import torch

    inp = x.detach().clone().requires_grad_(True)
    module.weight.grad = None
    if cudagraphs:
        torch.compiler.cudagraph_mark_step_begin()
    y = forward(inp)
    y.backward(dy)
    return y.detach().clone(), inp.grad.detach().clone(), module.weight.grad.detach().clone()


def timed_fwd_bwd(
    module: Any, forward: Callable[[Any], Any], x: Any, dy: Any, cudagraphs: bool
) -> Callable[[], tuple[Any, Any]]:
    """The step the timing loop repeats: forward+backward on one leaf whose gradients are reset; it
    returns (dgrad, wgrad), which the timed-output check compares."""
    import torch

    inp = x.detach().clone().requires_grad_(True)

    def step() -> tuple[Any, Any]:
        module.weight.grad = None
        inp.grad = None
        if cudagraphs:
            torch.compiler.cudagraph_mark_step_begin()
        forward(inp).backward(dy)
        return inp.grad, module.weight.grad

    return step

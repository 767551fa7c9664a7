"""Optimizer steps of the training suite's model, and the trajectory they leave: the loss and gradient norm
at every step.

One optimizer step is `micro_batches` forward+backward passes whose gradients accumulate (each loss
divided by their number), the global gradient norm clipped to MAX_GRAD_NORM (the norm before clipping is
the step's `grad_norm`), then AdamW. Steps are numbered from 1: step k's values are `loss[k - 1]` and
`grad_norm[k - 1]`, and a run resumed from step k continues with step k + 1.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from benchmarks.harness.executions import MicroBatchLoss
from benchmarks.harness.gpt import Gpt
from benchmarks.harness.profiles import TrainingShape
from benchmarks.harness.token_stream import TokenStream

MAX_GRAD_NORM = 1.0
BETAS = (0.9, 0.95)
WEIGHT_DECAY = 0.1


def finite_or_none(value: float) -> float | None:
    return value if math.isfinite(value) else None


@dataclass
class Trajectory:
    """docs/records.md, "Trajectory": one loss and one gradient norm per optimizer step, None where the
    value was NaN or infinite."""

    seed: int
    micro_batches: int
    tokens_per_step: int
    loss: list[float | None] = field(default_factory=list)
    grad_norm: list[float | None] = field(default_factory=list)
    resumed_from_step: int | None = None

    def first_non_finite_step(self) -> int | None:
        offset = self.resumed_from_step or 0
        return next((offset + i + 1 for i, v in enumerate(self.loss) if v is None), None)

    def to_json(self) -> dict[str, Any]:
        return {
            "seed": self.seed,
            "steps": len(self.loss),
            "micro_batches": self.micro_batches,
            "tokens_per_step": self.tokens_per_step,
            "loss": self.loss,
            "grad_norm": self.grad_norm,
            "resumed_from_step": self.resumed_from_step,
        }


class Trainer:
    def __init__(self, model: Gpt, loss: MicroBatchLoss, shape: TrainingShape) -> None:
        self.model, self.loss, self.shape = model, loss, shape
        self.optimizer = torch.optim.AdamW(
            model.parameters(), lr=shape.lr, betas=BETAS, weight_decay=WEIGHT_DECAY
        )
        self.steps_done = 0

    @property
    def current_step(self) -> int:
        """The number of the step being taken (or the next one, between steps)."""
        return self.steps_done + 1

    def step(self, batches: list[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        """One optimizer step over the micro-batches: (mean loss, gradient norm before clipping), on the
        device, unsynchronised (the timed call)."""
        self.optimizer.zero_grad(set_to_none=False)
        total = torch.zeros((), device=batches[0].device)
        for micro, tokens in enumerate(batches):
            loss = self.loss(tokens, micro == 0) / len(batches)
            loss.backward()
            total += loss.detach()
        grad_norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), MAX_GRAD_NORM)
        self.optimizer.step()
        self.steps_done += 1
        return total, grad_norm

    def train(
        self,
        stream: TokenStream,
        until: int,
        device: str,
        after_step: Callable[[Trainer], None] | None = None,
    ) -> Trajectory:
        """Steps current_step..until on the stream's batches of those steps, each value read back (the
        trajectory run: never timed)."""
        trajectory = Trajectory(
            seed=stream.seed,
            micro_batches=self.shape.micro_batches,
            tokens_per_step=self.shape.tokens_per_step,
            resumed_from_step=self.steps_done or None,
        )
        while self.steps_done < until:
            loss, grad_norm = self.step(
                stream.step_batches(self.current_step, self.shape.micro_batches, device)
            )
            trajectory.loss.append(finite_or_none(float(loss)))
            trajectory.grad_norm.append(finite_or_none(float(grad_norm)))
            if after_step:
                after_step(self)
        return trajectory

"""The te backend of a scenario on one rank: te.Linear sharded with Transformer Engine's own tensor
parallelism (parallel_mode, tp_group, sequence_parallel) and the unsharded te.Linear it must match,
both under the scenario's recipe. Transformer Engine is imported here, inside the rank processes."""

from __future__ import annotations

from typing import Any

import torch


class TELayers:
    def __init__(
        self, recipe: str, parallel_mode: str, sequence_parallel: bool, group: Any, world_size: int
    ) -> None:
        from benchmarks.harness import te_ops
        from benchmarks.harness.te_import import import_transformer_engine

        self.te = import_transformer_engine()
        self.recipe = te_ops.recipe(recipe)
        self.parallel_mode = parallel_mode
        self.sequence_parallel = sequence_parallel
        self.group = group
        self.world_size = world_size

    def _linear(self, in_features: int, out_features: int, **parallel: Any) -> Any:
        return self.te.Linear(
            in_features, out_features, bias=False, params_dtype=torch.bfloat16, device="cuda", **parallel
        )

    def reference(self, weight: torch.Tensor) -> torch.nn.Module:
        n, k = weight.shape
        layer = self._linear(k, n)
        with torch.no_grad():
            layer.weight.copy_(weight)
        return layer

    def sharded(self, weight_shard: torch.Tensor) -> torch.nn.Module:
        """te.Linear of the unsharded sizes; TE divides them by the group's size itself."""
        n, k = weight_shard.shape
        if self.parallel_mode == "column":
            n *= self.world_size
        else:
            k *= self.world_size
        layer = self._linear(
            k,
            n,
            parallel_mode=self.parallel_mode,
            tp_group=self.group,
            tp_size=self.world_size,
            sequence_parallel=self.sequence_parallel,
        )
        if tuple(layer.weight.shape) != tuple(weight_shard.shape):
            raise AssertionError(
                f"te.Linear holds a {tuple(layer.weight.shape)} weight shard, "
                f"expected {tuple(weight_shard.shape)}"
            )
        with torch.no_grad():
            layer.weight.copy_(weight_shard)
        return layer

    def forward(self, module: torch.nn.Module) -> Any:
        te, recipe = self.te, self.recipe

        def forward(inp: torch.Tensor) -> torch.Tensor:
            with te.autocast(enabled=recipe is not None, recipe=recipe):
                return module(inp)

        return forward

    def gather_checks(
        self, module: torch.nn.Module, x: torch.Tensor, dy: torch.Tensor
    ) -> dict[str, list[int]]:
        return {}

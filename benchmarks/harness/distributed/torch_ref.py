"""The tensor-parallel NVFP4 Linear in plain PyTorch: the project's emulation plus torch.distributed.

It does what te.Linear does under NVFP4BlockScaling with a tensor-parallel group, so that the launcher,
the collectives and the verdicts run on CPU with gloo:

- operands quantized like the single-GPU emulated layer (input 1x16 blocks, weight 16x16 tiles, the
  wgrad operands column-wise with the RHT along the tokens);
- with sequence parallelism, the tensor that is all-gathered (the input of a column-parallel layer, the
  output gradient of a row-parallel one) is quantized on each rank with the amax reduced over the
  group, and gathered quantized: the row-wise data and scales stack along the tokens as they are; the
  column-wise data (K, M_r/2) of the ranks arrive stacked as (world * K, M_r/2) and are reorganised to
  (K, M/2) by swapping the first two dimensions of (world, K, M_r/2), as TE's `_swap_first_dims` does;
- partial results are all-reduced, or reduce-scattered along the tokens with sequence parallelism.

The last column-wise buffer gathered in backward is kept in `gathered_columnwise` under the name of the
tensor it holds, so a check can compare it bit for bit with the quantization of the whole tensor.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.distributed as dist

from benchmarks.nvfp4_emulation import (
    NVFP4Emulated,
    apply_rht,
    gemm_nvfp4,
    quantize_nvfp4,
    quantize_nvfp4_columnwise,
)

_all_gather_single = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor
_reduce_scatter_single = getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor


def _as_bytes(t: torch.Tensor) -> torch.Tensor:
    return t.contiguous().view(torch.uint8)


def all_gather_first_dim(t: torch.Tensor, group: Any) -> torch.Tensor:
    """The ranks' tensors stacked along the first dimension (moved as bytes: gloo has no float8)."""
    world = dist.get_world_size(group)
    raw = _as_bytes(t)
    out = torch.empty((world * raw.shape[0], *raw.shape[1:]), dtype=torch.uint8, device=raw.device)
    _all_gather_single(out, raw, group=group)
    return out.view(t.dtype)


def reduce_scatter_first_dim(t: torch.Tensor, group: Any) -> torch.Tensor:
    world = dist.get_world_size(group)
    out = torch.empty((t.shape[0] // world, *t.shape[1:]), dtype=t.dtype, device=t.device)
    _reduce_scatter_single(out, t.contiguous(), group=group)
    return out


def all_reduce_sum(t: torch.Tensor, group: Any) -> torch.Tensor:
    dist.all_reduce(t, group=group)
    return t


def group_amax(values: torch.Tensor, group: Any) -> torch.Tensor:
    """The amax over the group, float32 (1,): what every rank's quantizer must use to agree."""
    amax = values.abs().amax().to(torch.float32).reshape(1)
    dist.all_reduce(amax, op=dist.ReduceOp.MAX, group=group)
    return amax


def swap_first_dims(t: torch.Tensor, world: int) -> torch.Tensor:
    """(world * d0, d1) -> (d0, world * d1): rank-major blocks of rows become column blocks."""
    d0 = t.shape[0] // world
    raw = _as_bytes(t).reshape(world, d0, -1).transpose(0, 1).reshape(d0, -1)
    return raw.view(t.dtype)


def gather_rowwise(q: NVFP4Emulated, group: Any) -> NVFP4Emulated:
    """Row-wise NVFP4 (M_r, K) of each rank -> (M, K): data and scales stack along the rows."""
    data = all_gather_first_dim(q.data.reshape(q.rows, q.cols // 2), group)
    scales = all_gather_first_dim(q.scales, group)
    return dataclasses.replace(q, data=data, scales=scales, shape=torch.Size((data.shape[0], q.cols)))


def gather_columnwise(q: NVFP4Emulated, group: Any, reorder: bool = True) -> NVFP4Emulated:
    """Column-wise NVFP4 (K, M_r) of each rank's token shard -> (K, M).

    `reorder=False` reads the stacked buffer as if it were already (K, M/2): the layout bug this
    reorganisation exists to avoid, kept so that tests can show the checks catch it.
    """
    world = dist.get_world_size(group)
    data = all_gather_first_dim(q.data, group)
    scales = all_gather_first_dim(q.scales, group)
    k = q.rows
    if reorder:
        data, scales = swap_first_dims(data, world), swap_first_dims(scales, world)
    else:
        data, scales = data.reshape(k, -1), _as_bytes(scales).reshape(k, -1).view(scales.dtype)
    return dataclasses.replace(q, data=data, scales=scales, shape=torch.Size((k, q.cols * world)))


def _columnwise_amax_input(x2d: torch.Tensor) -> torch.Tensor:
    """The values whose amax the column-wise (RHT) quantization of x2d uses."""
    return apply_rht(x2d.t().contiguous())


def quantize_for_gather(x2d: torch.Tensor, group: Any) -> tuple[NVFP4Emulated, NVFP4Emulated]:
    """Row-wise and column-wise (RHT) NVFP4 of a token shard, with amaxes reduced over the group."""
    rowwise = quantize_nvfp4(x2d, global_amax=group_amax(x2d, group))
    columnwise = quantize_nvfp4_columnwise(
        x2d, rht=True, global_amax=group_amax(_columnwise_amax_input(x2d), group)
    )
    return rowwise, columnwise


@dataclass(eq=False)
class ParallelConfig:
    group: Any
    world_size: int
    sequence_parallel: bool  # effective: only with more than one rank
    reorder_columnwise: bool = True
    gathered_columnwise: dict[str, NVFP4Emulated] = field(default_factory=dict)


class _ColumnParallel(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: torch.Tensor, weight: torch.Tensor, cfg: ParallelConfig) -> torch.Tensor:
        x2d = x.reshape(-1, x.shape[-1])
        if cfg.sequence_parallel:
            local_row, x_col = quantize_for_gather(x2d, cfg.group)
            x_row = gather_rowwise(local_row, cfg.group)
        else:
            x_row, x_col = quantize_nvfp4(x2d), quantize_nvfp4_columnwise(x2d, rht=True)
        ctx.save_for_backward(weight)
        ctx.cfg, ctx.x_col, ctx.x_shape = cfg, x_col, x.shape
        y = gemm_nvfp4(x_row, quantize_nvfp4(weight, block_2d=True), out_dtype=x.dtype)
        return y.view(-1, *x.shape[1:-1], weight.shape[0])

    @staticmethod
    def backward(ctx, grad_out: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, None]:
        (weight,) = ctx.saved_tensors
        cfg: ParallelConfig = ctx.cfg
        dy2d = grad_out.reshape(-1, weight.shape[0])
        partial = gemm_nvfp4(
            quantize_nvfp4(dy2d), quantize_nvfp4_columnwise(weight, block_2d=True), out_dtype=grad_out.dtype
        )
        dgrad = _reduce_partial(partial, cfg)
        if cfg.sequence_parallel:
            x_col = gather_columnwise(ctx.x_col, cfg.group, cfg.reorder_columnwise)
            cfg.gathered_columnwise["input"] = x_col
        else:
            x_col = ctx.x_col
        wgrad = gemm_nvfp4(quantize_nvfp4_columnwise(dy2d, rht=True), x_col, out_dtype=weight.dtype)
        return dgrad.view(ctx.x_shape), wgrad, None


def _reduce_partial(partial: torch.Tensor, cfg: ParallelConfig) -> torch.Tensor:
    """Sum the ranks' partial products: scattered over the sequence with sequence parallelism, else
    all-reduced (TE's row-parallel output and column-parallel dgrad)."""
    if cfg.sequence_parallel:
        return reduce_scatter_first_dim(partial, cfg.group)
    return all_reduce_sum(partial, cfg.group) if cfg.world_size > 1 else partial


class _RowParallel(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: torch.Tensor, weight: torch.Tensor, cfg: ParallelConfig) -> torch.Tensor:
        x2d = x.reshape(-1, x.shape[-1])
        partial = gemm_nvfp4(quantize_nvfp4(x2d), quantize_nvfp4(weight, block_2d=True), out_dtype=x.dtype)
        y = _reduce_partial(partial, cfg)
        ctx.save_for_backward(weight)
        ctx.cfg, ctx.x_col, ctx.x_shape = cfg, quantize_nvfp4_columnwise(x2d, rht=True), x.shape
        return y.view(-1, *x.shape[1:-1], weight.shape[0])

    @staticmethod
    def backward(ctx, grad_out: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, None]:
        (weight,) = ctx.saved_tensors
        cfg: ParallelConfig = ctx.cfg
        dy2d = grad_out.reshape(-1, weight.shape[0])
        if cfg.sequence_parallel:
            local_row, local_col = quantize_for_gather(dy2d, cfg.group)
            dy_row = gather_rowwise(local_row, cfg.group)
            dy_col = gather_columnwise(local_col, cfg.group, cfg.reorder_columnwise)
            cfg.gathered_columnwise["grad_output"] = dy_col
        else:
            dy_row, dy_col = quantize_nvfp4(dy2d), quantize_nvfp4_columnwise(dy2d, rht=True)
        dgrad = gemm_nvfp4(dy_row, quantize_nvfp4_columnwise(weight, block_2d=True), out_dtype=grad_out.dtype)
        wgrad = gemm_nvfp4(dy_col, ctx.x_col, out_dtype=weight.dtype)
        return dgrad.view(ctx.x_shape), wgrad, None


class TensorParallelNVFP4Linear(torch.nn.Module):
    """One rank's shard of an NVFP4 Linear without bias: weight (N/world, K) or (N, K/world)."""

    def __init__(self, weight_shard: torch.Tensor, parallel_mode: str, config: ParallelConfig) -> None:
        super().__init__()
        if parallel_mode not in ("column", "row"):
            raise ValueError(f"parallel_mode must be column or row, not {parallel_mode!r}")
        self.weight = torch.nn.Parameter(weight_shard.detach().clone())
        self.parallel_mode = parallel_mode
        self.config = config

    @property
    def gathered_columnwise(self) -> dict[str, NVFP4Emulated]:
        return self.config.gathered_columnwise

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        fn = _ColumnParallel if self.parallel_mode == "column" else _RowParallel
        return fn.apply(x, self.weight, self.config)


def columnwise_mismatch(gathered: NVFP4Emulated, whole: NVFP4Emulated) -> tuple[int, int]:
    """(bytes that differ, bytes compared) between a gathered column-wise tensor and the column-wise
    quantization of the whole tensor: data, scales and amax. A shape mismatch counts every byte."""
    pairs = [
        (gathered.data, whole.data),
        (gathered.scales, whole.scales),
        (gathered.global_amax, whole.global_amax),
    ]
    differ = total = 0
    for a, b in pairs:
        a_raw, b_raw = _as_bytes(a).reshape(-1), _as_bytes(b).reshape(-1)
        total += b_raw.numel()
        if a.shape != b.shape:
            differ += b_raw.numel()
        else:
            differ += int((a_raw != b_raw).sum())
    return differ, total


class TorchRefLayers:
    """The torch-ref backend of a scenario on one rank: single-GPU reference and sharded layer."""

    def __init__(
        self,
        parallel_mode: str,
        sequence_parallel: bool,
        group: Any,
        world_size: int,
        reorder_columnwise: bool = True,
    ) -> None:
        self.parallel_mode = parallel_mode
        self.sequence_parallel = sequence_parallel and world_size > 1
        self.group = group
        self.world_size = world_size
        self.reorder_columnwise = reorder_columnwise

    def reference(self, weight: torch.Tensor) -> torch.nn.Module:
        from benchmarks.harness.emulated_linear import EmulatedNVFP4Linear

        n, k = weight.shape
        layer = EmulatedNVFP4Linear(k, n, device=str(weight.device), dtype=weight.dtype)
        with torch.no_grad():
            layer.weight.copy_(weight)
        return layer

    def sharded(self, weight_shard: torch.Tensor) -> TensorParallelNVFP4Linear:
        config = ParallelConfig(self.group, self.world_size, self.sequence_parallel, self.reorder_columnwise)
        return TensorParallelNVFP4Linear(weight_shard, self.parallel_mode, config)

    def forward(self, module: torch.nn.Module) -> Any:
        return module

    def gather_checks(
        self, module: torch.nn.Module, x: torch.Tensor, dy: torch.Tensor
    ) -> dict[str, list[int]]:
        """{tensor: [differing bytes, compared bytes]} for each column-wise gather of the last step,
        against the column-wise quantization of the whole (unsharded) tensor."""
        whole = {"input": x, "grad_output": dy}
        out: dict[str, list[int]] = {}
        for name, gathered in getattr(module, "gathered_columnwise", {}).items():
            full = whole[name].reshape(-1, whole[name].shape[-1])
            differ, total = columnwise_mismatch(gathered, quantize_nvfp4_columnwise(full, rht=True))
            out[name] = [differ, total]
        return out

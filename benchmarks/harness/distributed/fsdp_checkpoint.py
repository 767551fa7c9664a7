"""A Linear sharded with FSDP2 (`fully_shard`) across the ranks, saved and loaded through
torch.distributed.checkpoint into a freshly built sharded Linear (harness/dcp_round_trip.py, every rank
at once).

te: a te.Linear whose weight is quantized at init (`te.quantized_model_init` under the recipe), so
FSDP2 shards TE's quantized parameter and the state dict carries its `_extra_state`. torch-ref: the
project's emulated NVFP4 Linear (plain bf16 weights), the same path with gloo on CPU or NCCL on GPUs. Before the save, one forward and
backward step, so that the quantization state is not blank.

Each rank compares its own shards (buffers bit for bit, the forward pass of its own input); the case's
check is the worst rank's.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.harness.distributed.worker import phase
from benchmarks.harness.records import _SEVERITY, Check

BACKENDS = ("te", "torch-ref")


@dataclass(frozen=True)
class FsdpJob:
    backend: str
    recipe: str  # a recipe of dcp_round_trip.RECIPES (te) or "torch-ref"
    device: str  # "cuda" (NCCL) or "cpu" (gloo)
    world_size: int
    in_features: int
    out_features: int
    tokens: int  # of each rank's input
    seed: int = 0

    def __post_init__(self) -> None:
        if self.backend not in BACKENDS:
            raise ValueError(f"backend must be one of {BACKENDS}, not {self.backend!r}")
        if self.out_features % self.world_size:
            raise ValueError(f"out_features={self.out_features} does not shard over {self.world_size} ranks")


class _TELinear:
    def __init__(self, job: FsdpJob) -> None:
        from benchmarks.harness import te_ops

        self.te, self.recipe, self.job = te_ops.loaded().te, te_ops.recipe(job.recipe), job

    def build(self) -> Any:
        import torch

        with self.te.quantized_model_init(enabled=True, recipe=self.recipe):
            return self.te.Linear(
                self.job.in_features,
                self.job.out_features,
                bias=False,
                params_dtype=torch.bfloat16,
                device="cuda",
            )

    def __call__(self, module: Any, x: Any) -> Any:
        with self.te.autocast(enabled=True, recipe=self.recipe):
            return module(x)

    @staticmethod
    def buffers(module: Any) -> dict[str, Any]:
        import torch

        from benchmarks.harness import te_ops

        local = module.weight.to_local()
        found = {f"weight.{n}": b for n, b in te_ops.valid_buffers(local).items()} or {"weight": local}
        extra = module.get_extra_state()
        if isinstance(extra, torch.Tensor):
            found["_extra_state"] = extra
        return found


class _TorchRefLinear:
    def __init__(self, job: FsdpJob) -> None:
        self.job = job

    def build(self) -> Any:
        import torch

        from benchmarks.harness.emulated_linear import EmulatedNVFP4Linear

        device = "cuda" if self.job.device == "cuda" else "cpu"  # the rank's own GPU, set by the launcher
        return EmulatedNVFP4Linear(
            self.job.in_features, self.job.out_features, device=device, dtype=torch.bfloat16
        )

    @staticmethod
    def __call__(module: Any, x: Any) -> Any:
        return module(x)

    @staticmethod
    def buffers(module: Any) -> dict[str, Any]:
        return {"weight": module.weight.to_local()}


def _layer(job: FsdpJob) -> Any:
    return _TELinear(job) if job.backend == "te" else _TorchRefLinear(job)


def _shared_folder(rank: int) -> Path:
    """A fresh folder made by rank 0, its path the same on every rank (the ranks share one host)."""
    import torch.distributed as dist

    made = [tempfile.mkdtemp(prefix="tewatch-fsdp-dcp-") if rank == 0 else None]
    dist.broadcast_object_list(made, src=0)
    folder = made[0]
    assert folder is not None, "rank 0 broadcast no folder"
    return Path(folder)


def run_fsdp_checkpoint(rank: int, world_size: int, job: FsdpJob) -> dict[str, Any]:
    """The rank function the launcher calls: this rank's checks of the round trip, as JSON."""
    import torch
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    from benchmarks.harness.dcp_round_trip import dcp_round_trip

    with phase("setup"):
        t0 = time.perf_counter()
        if world_size != job.world_size:
            raise ValueError(f"launched {world_size} ranks for a job of {job.world_size}")
        device = (
            torch.device("cuda", torch.cuda.current_device()) if job.device == "cuda" else torch.device("cpu")
        )
        mesh = init_device_mesh(device.type, (world_size,))
        layer = _layer(job)
        # data parallel: each rank its own input
        gen = torch.Generator().manual_seed(job.seed * 1000 + rank)
        x = torch.randn(job.tokens, job.in_features, generator=gen).to(device=device, dtype=torch.bfloat16)

    def sharded(seed: int) -> Any:
        torch.manual_seed(seed)  # the same on every rank: one module, sharded
        module = layer.build()
        fully_shard(module, mesh=mesh)
        return module

    def buffers(module: Any) -> dict[str, Any]:
        module.reshard()  # the root stays unsharded after a forward pass
        return layer.buffers(module)

    def forward(module: Any) -> Any:
        with torch.no_grad():
            return layer(module, x).float()

    with phase("fsdp_step"):
        original = sharded(1)
        layer(original, x).float().square().mean().backward()
        original.reshard()
    folder = _shared_folder(rank)
    try:
        with phase("fsdp_fresh"):
            fresh = sharded(2)
        checks = dcp_round_trip(original, fresh, folder, buffers, forward, distributed=True)
    finally:
        dist.barrier()
        if rank == 0:
            shutil.rmtree(folder, ignore_errors=True)
    return {"rank": rank, "checks": [c.to_json() for c in checks], "seconds": time.perf_counter() - t0}


def case_checks(reports: list[dict[str, Any]]) -> list[Check]:
    """Per check, the worst rank's (the first on ties), its message saying which rank and how the others
    fared."""
    by_rank = sorted(reports, key=lambda r: r["rank"])
    names = list(dict.fromkeys(c["check"] for r in by_rank for c in r["checks"]))
    out = []
    for name in names:
        found = [(r["rank"], Check(**c)) for r in by_rank for c in r["checks"] if c["check"] == name]
        rank, worst = max(found, key=lambda rc: _SEVERITY[rc[1].status])
        summary = ", ".join(f"rank {r} {c.status}" for r, c in found)
        worst.message = f"rank {rank}: {worst.message}; {summary}" if worst.message else summary
        out.append(worst)
    return out

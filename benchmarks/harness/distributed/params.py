"""Which tensor-parallel scenarios each profile runs (TEWATCH_PROFILE, see harness.profiles).

World size 1 is the single-GPU baseline of the scaling efficiency (time at 1 GPU / time at N): one
layer with no communication, so it runs once per recipe and mode, column-parallel without sequence
parallelism (TE ignores both settings for a group of one).
"""

from __future__ import annotations

from dataclasses import dataclass

from benchmarks.harness.profiles import profile_name
from benchmarks.harness.timing import TimingPlan

BASELINE = ("column", False)


@dataclass(frozen=True)
class DistributedProfile:
    world_sizes: tuple[int, ...]
    parallel_modes: tuple[str, ...]
    sequence_parallel: tuple[bool, ...]
    modes: tuple[str, ...]
    # the project's NVFP4 emulation (CI's oracle) runs in these modes only: its compiles are the slowest
    torch_ref_modes: tuple[str, ...]
    shape: tuple[int, int, int]  # (S, B, K) of the unsharded input, [s, b, h] as Megatron lays it out
    out_features: int
    timing: TimingPlan
    deadline_s: float  # one launch: start, rendezvous, reference, compile, timing
    # FsdpCheckpoint: (in_features, out_features, tokens of each rank) of its Linear; None leaves it out
    fsdp_checkpoint: tuple[int, int, int] | None = None

    def is_case(
        self, recipe: str, world_size: int, parallel: str, sequence_parallel: bool, mode: str
    ) -> bool:
        if recipe == "torch-ref" and mode not in self.torch_ref_modes:
            return False
        if world_size == 1:
            return (parallel, sequence_parallel) == BASELINE
        return parallel in self.parallel_modes and sequence_parallel in self.sequence_parallel

    @property
    def parallel_values(self) -> list[str]:
        base = [BASELINE[0]] if 1 in self.world_sizes else []
        return list(dict.fromkeys(base + list(self.parallel_modes)))

    @property
    def sequence_parallel_values(self) -> list[bool]:
        base = [BASELINE[1]] if 1 in self.world_sizes else []
        return list(dict.fromkeys(base + list(self.sequence_parallel)))


_GPU_TIMING = TimingPlan(budget_s=0.5, min_samples=10, max_samples=100)
PROFILES = {
    "full": DistributedProfile(
        world_sizes=(1, 2),
        parallel_modes=("column", "row"),
        sequence_parallel=(False, True),
        modes=("eager", "default"),
        torch_ref_modes=("eager", "default"),
        shape=(4096, 2, 4096),
        out_features=4096,
        timing=_GPU_TIMING,
        deadline_s=300.0,
        fsdp_checkpoint=(4096, 4096, 2048),
    ),
    # pull requests: the sharded cases alone (no single-GPU baseline, so no scaling efficiency; on a
    # 1-GPU runner they are `unsupported` at once), where the gather and reorganisation bugs hide
    "quick": DistributedProfile(
        world_sizes=(2,),
        parallel_modes=("column", "row"),
        sequence_parallel=(True,),
        modes=("eager", "default"),
        torch_ref_modes=(),
        shape=(4096, 2, 4096),
        out_features=4096,
        timing=_GPU_TIMING,
        deadline_s=300.0,
    ),
    "ci": DistributedProfile(
        world_sizes=(2,),
        parallel_modes=("column",),
        sequence_parallel=(True,),
        modes=("eager",),
        torch_ref_modes=("eager",),
        shape=(32, 2, 128),
        out_features=128,
        timing=TimingPlan(budget_s=0.1, min_samples=5, max_samples=20),
        deadline_s=120.0,
        fsdp_checkpoint=(128, 128, 32),
    ),
}


def current() -> DistributedProfile:
    return PROFILES[profile_name()]

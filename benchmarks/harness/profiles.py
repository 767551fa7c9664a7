"""Profiles: which params each suite runs, chosen by the environment that `tewatch run` sets.

TEWATCH_PROFILE  full (default) | quick (pull requests) | ci (torch-ref on CPU, tiny shapes)
TEWATCH_BACKENDS comma-separated subset of te, te-ref, torch-ref (default: all for full/quick,
                 torch-ref for ci)

asv reads `params` at import, in every process it starts, so the environment must stay the same for
the whole run; the wrapper guarantees that.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

BACKENDS = ("te", "te-ref", "torch-ref")
PROFILES = ("full", "quick", "ci")


@dataclass(frozen=True)
class TrainingShape:
    """The training suite's model and run (benchmarks/training.py, docs/training.md)."""

    layers: int
    hidden: int
    heads: int
    ffn_hidden: int
    vocab: int
    seq_len: int
    micro_batch: int  # sequences per micro-batch
    micro_batches: int  # micro-batches per optimizer step (gradient accumulation)
    steps: int  # optimizer steps of the trajectory
    lr: float = 3e-4
    seed: int = 1234

    @property
    def tokens_per_step(self) -> int:
        return self.seq_len * self.micro_batch * self.micro_batches


# about 59M parameters (4 layers of 12.6M at hidden 1024, an 8.4M embedding tied to the output head)
FULL_TRAINING = TrainingShape(
    layers=4,
    hidden=1024,
    heads=16,
    ffn_hidden=4096,
    vocab=8192,
    seq_len=512,
    micro_batch=8,
    micro_batches=4,
    steps=50,
)


@dataclass(frozen=True)
class Profile:
    name: str
    device: str  # "cuda" or "cpu"
    quantize_shapes: tuple[str, ...]
    rht_shapes: tuple[str, ...]
    gemm_shapes: tuple[str, ...]  # MxNxK
    linear_in_out: tuple[int, int]
    linear_tokens: int
    linear_ranks: tuple[int, ...]
    linear_modes: tuple[str, ...]
    # modes of the torch-ref te.Linear: the project's own emulation, whose compiles under reduce-overhead
    # and max-autotune test inductor on this project's code rather than TE
    linear_torch_ref_modes: tuple[str, ...]
    contract_shape: tuple[int, int]  # (tokens, hidden) spread over ranks 2D/3D/4D
    contract_ranks: tuple[int, ...]
    sample_budget_s: float  # time spent on samples per case
    min_samples: int
    max_samples: int
    # the general checks of benchmarks/checks.py this profile runs
    general_checks: tuple[str, ...] = (
        "Determinism",
        "OddShapes",
        "CpuOps",
        "NdUpdate",
        "DcpRoundTrip",
        "CompileSequence",
        "CompiledLayer",
    )
    # the host-overhead suite (benchmarks/host.py): token counts and the hidden size of its layers
    host_tokens: tuple[int, ...] = (1, 4, 16, 64)
    host_hidden: int = 4096
    # the training suite: its model and run, and the cases it keeps ("backend/recipe/execution" patterns
    # as fnmatch reads them)
    training: TrainingShape = FULL_TRAINING
    training_cases: tuple[str, ...] = ("*",)
    # torch's intra-op threads for CPU cases: one, so that a busy core beside the run slows a case by its
    # share and no more (two spinning threads on a 2-core machine with one core taken ran 50x slower)
    cpu_threads: int | None = None


_PROFILES = {
    "full": Profile(
        name="full",
        device="cuda",
        quantize_shapes=("8192x5120", "16384x8192", "4x2048x5120", "2x2x2048x5120"),
        rht_shapes=("8192x5120", "16384x8192"),
        gemm_shapes=("8192x8192x5120", "16384x8192x8192", "4096x4096x4096"),
        linear_in_out=(4096, 4096),
        linear_tokens=8192,
        linear_ranks=(2, 3, 4),
        linear_modes=("eager", "default", "reduce-overhead", "max-autotune"),
        linear_torch_ref_modes=("eager", "default"),
        contract_shape=(4096, 5120),
        contract_ranks=(2, 3, 4),
        sample_budget_s=0.5,
        min_samples=10,
        max_samples=100,
    ),
    "quick": Profile(
        name="quick",
        device="cuda",
        quantize_shapes=("8192x5120", "4x2048x5120"),
        rht_shapes=("8192x5120",),
        gemm_shapes=("8192x8192x5120",),
        linear_in_out=(4096, 4096),
        linear_tokens=8192,
        linear_ranks=(2, 3, 4),
        linear_modes=("eager", "default"),
        # CI runs it on CPU at every commit and full GPU runs keep it; on an H200 quick run its
        # compiles took 73 of 384 s
        linear_torch_ref_modes=(),
        contract_shape=(4096, 5120),
        contract_ranks=(2, 3, 4),
        sample_budget_s=0.3,
        min_samples=10,
        max_samples=50,
        # a second or so a case; odd shapes (36 cases) and compile sequences (14 compiles) stay in full
        general_checks=("Determinism", "CpuOps", "NdUpdate"),
        host_tokens=(1, 64),
        training=TrainingShape(
            layers=2,
            hidden=1024,
            heads=16,
            ffn_hidden=4096,
            vocab=8192,
            seq_len=256,
            micro_batch=8,
            micro_batches=4,
            steps=30,
        ),
        # every recipe eager; compile and CUDA graphs once each in bf16, and graphs once with FP8 weight caching
        training_cases=("te/*/eager", "te/bf16/*", "te/fp8-current/graphed", "torch/bf16/eager"),
    ),
    "ci": Profile(
        name="ci",
        device="cpu",
        quantize_shapes=("128x256", "2x2x32x256"),
        rht_shapes=("128x256",),
        gemm_shapes=("128x128x256",),
        linear_in_out=(128, 128),
        linear_tokens=64,
        linear_ranks=(2, 3, 4),
        linear_modes=("eager", "default"),
        linear_torch_ref_modes=("eager", "default"),
        contract_shape=(64, 128),
        contract_ranks=(2, 3, 4),
        sample_budget_s=0.1,
        min_samples=5,
        max_samples=20,
        training=TrainingShape(
            layers=2,
            hidden=32,
            heads=4,
            ffn_hidden=64,
            vocab=64,
            seq_len=16,
            micro_batch=2,
            micro_batches=2,
            steps=8,
            lr=3e-3,
        ),
        training_cases=("torch/*/eager",),
        cpu_threads=1,
        host_tokens=(16,),
        host_hidden=128,
    ),
}


def profile_name() -> str:
    name = os.environ.get("TEWATCH_PROFILE", "full").strip() or "full"
    if name not in _PROFILES:
        raise ValueError(f"TEWATCH_PROFILE={name!r} is not one of {', '.join(PROFILES)}")
    return name


def current_profile() -> Profile:
    return _PROFILES[profile_name()]


def get_profile(name: str) -> Profile:
    return _PROFILES[name]


def selected_backends() -> tuple[str, ...]:
    raw = os.environ.get("TEWATCH_BACKENDS", "").strip()
    if not raw:
        return ("torch-ref",) if profile_name() == "ci" else BACKENDS
    chosen = tuple(b.strip() for b in raw.split(",") if b.strip())
    unknown = [b for b in chosen if b not in BACKENDS]
    if unknown:
        raise ValueError(f"TEWATCH_BACKENDS has unknown backends {unknown}; known: {', '.join(BACKENDS)}")
    return chosen


def parse_shape(text: str) -> tuple[int, ...]:
    """'4x2048x5120' -> (4, 2048, 5120)."""
    try:
        dims = tuple(int(d) for d in text.lower().split("x"))
    except ValueError as exc:
        raise ValueError(f"shape {text!r} is not of the form AxBxC") from exc
    if not dims or any(d <= 0 for d in dims):
        raise ValueError(f"shape {text!r} has a non-positive dimension")
    return dims


def spread_over_rank(tokens: int, hidden: int, rank: int) -> tuple[int, ...]:
    """(tokens, hidden) as an input of the given rank with the same number of elements.

    Rank 3 is (2, tokens/2, hidden), rank 4 is (2, 2, tokens/4, hidden): the leading dimensions are
    never 1, so layouts that only agree for degenerate shapes cannot hide a bug.
    """
    if rank == 2:
        return (tokens, hidden)
    lead = (2,) * (rank - 2)
    rest = tokens // math.prod(lead)
    if rest * math.prod(lead) != tokens:
        raise ValueError(f"{tokens} tokens do not split over rank {rank}")
    return (*lead, rest, hidden)

"""One tensor-parallel case and the slice of the single-GPU tensors that each rank holds.

The unsharded layer is y = x @ W.T with x (S, B, K), W (N, K), y (S, B, N). Megatron-style tensor
parallelism, as te.Linear implements it:

- column-parallel: rank r owns the rows N_r of W and produces y[..., N_r]. With sequence parallelism
  its input is x[S_r] (the ranks all-gather it along the first dimension) and dgrad is
  reduce-scattered back to x[S_r]; without, every rank takes all of x and dgrad is all-reduced.
- row-parallel: rank r owns the columns K_r of W and takes x[..., K_r]; the partial outputs are
  all-reduced to y, or reduce-scattered to y[S_r] with sequence parallelism (whose backward then
  all-gathers the output gradient).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from benchmarks.harness.timing import TimingPlan

PARALLEL_MODES = ("column", "row")
BACKENDS = ("te", "torch-ref")
# testing hooks: each makes a rank do something wrong, and some check must notice
FAULTS = ("wrong_weight_shard", "skip_columnwise_reorder", "hang", "raise")
Index = tuple[slice, ...]
_ALL = slice(None)


@dataclass(frozen=True)
class Scenario:
    backend: str
    recipe: str
    parallel_mode: str
    sequence_parallel: bool
    mode: str  # "eager" or a torch.compile mode
    world_size: int
    device: str  # "cuda" (NCCL) or "cpu" (gloo)
    shape: tuple[int, int, int]  # (S, B, K) of the unsharded input
    out_features: int
    timing: TimingPlan = field(default_factory=TimingPlan)
    seed: int = 0
    fault: str | None = None

    def __post_init__(self) -> None:
        if self.backend not in BACKENDS:
            raise ValueError(f"backend must be one of {BACKENDS}, not {self.backend!r}")
        if self.parallel_mode not in PARALLEL_MODES:
            raise ValueError(f"parallel_mode must be one of {PARALLEL_MODES}, not {self.parallel_mode!r}")
        if self.device not in ("cuda", "cpu"):
            raise ValueError(f"device must be cuda or cpu, not {self.device!r}")
        if self.world_size < 1:
            raise ValueError(f"world_size must be at least 1, not {self.world_size}")
        if self.fault is not None and self.fault not in FAULTS:
            raise ValueError(f"fault must be one of {FAULTS}, not {self.fault!r}")
        seq, _, k = self.shape
        ws = self.world_size
        split = {"column": ("out_features", self.out_features), "row": ("in_features", k)}[self.parallel_mode]
        if split[1] % ws:
            raise ValueError(f"{split[0]}={split[1]} does not split over {ws} ranks ({self.parallel_mode})")
        if self.sequence_parallel and seq % ws:
            raise ValueError(f"sequence length {seq} does not split over {ws} ranks (sequence parallel)")

    @property
    def sequence_sharded(self) -> bool:
        """TE turns sequence parallelism off for a single rank; so does the geometry."""
        return self.sequence_parallel and self.world_size > 1

    def label(self) -> str:
        sp = "+sp" if self.sequence_parallel else ""
        return f"{self.backend}/{self.recipe} {self.parallel_mode}{sp} {self.mode} x{self.world_size}"


def _chunk(size: int, rank: int, world_size: int) -> slice:
    step = size // world_size
    return slice(rank * step, (rank + 1) * step)


@dataclass(frozen=True)
class Shards:
    """Index expressions into the single-GPU tensors for one rank of a scenario."""

    scenario: Scenario

    def _seq(self, rank: int) -> slice:
        sc = self.scenario
        return _chunk(sc.shape[0], rank, sc.world_size) if sc.sequence_sharded else _ALL

    def weight(self, rank: int) -> Index:
        """W (N, K): the rows (column-parallel) or columns (row-parallel) rank r owns; also its wgrad."""
        sc = self.scenario
        if sc.parallel_mode == "column":
            return (_chunk(sc.out_features, rank, sc.world_size), _ALL)
        return (_ALL, _chunk(sc.shape[2], rank, sc.world_size))

    def input(self, rank: int) -> Index:
        """x (S, B, K) as rank r takes it; also where its dgrad lands."""
        sc = self.scenario
        if sc.parallel_mode == "column":
            return (self._seq(rank), _ALL, _ALL)
        return (_ALL, _ALL, _chunk(sc.shape[2], rank, sc.world_size))

    def output(self, rank: int) -> Index:
        """y (S, B, N) as rank r produces it; also the output gradient it is given."""
        sc = self.scenario
        if sc.parallel_mode == "column":
            return (_ALL, _ALL, _chunk(sc.out_features, rank, sc.world_size))
        return (self._seq(rank), _ALL, _ALL)

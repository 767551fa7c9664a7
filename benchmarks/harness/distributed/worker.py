"""What each rank runs for one scenario (called by the launcher inside an initialised process group).

1. the single-GPU reference: the unsharded layer on the whole input (every rank computes it; no
   collective, so it is the same everywhere);
2. the sharded layer in eager mode on this rank's slice: output, dgrad and wgrad against the matching
   slices of the reference, and the column-wise gathers bit for bit where the backend keeps them;
3. for a compile mode, a second sharded layer under torch.compile against the eager one;
4. the timing of forward+backward of the layer of the case's mode.

Returns a JSON-ready report; an exception leaves with `phase` set to the step it happened in.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import Any

from benchmarks.harness.distributed.scenario import Scenario, Shards
from benchmarks.harness.linear_steps import fwd_bwd, timed_fwd_bwd

TENSORS = ("output", "dgrad", "wgrad")
HANG_SECONDS = 3600.0


@contextlib.contextmanager
def phase(name: str) -> Iterator[None]:
    try:
        yield
    except BaseException as exc:
        if not hasattr(exc, "phase"):
            exc.phase = name  # type: ignore[attr-defined]
        raise


def _layers(scenario: Scenario, group: Any) -> Any:
    if scenario.backend == "te":
        from benchmarks.harness.distributed.te_linear import TELayers

        return TELayers(
            scenario.recipe, scenario.parallel_mode, scenario.sequence_parallel, group, scenario.world_size
        )
    from benchmarks.harness.distributed.torch_ref import TorchRefLayers

    return TorchRefLayers(
        scenario.parallel_mode,
        scenario.sequence_parallel,
        group,
        scenario.world_size,
        reorder_columnwise=scenario.fault != "skip_columnwise_reorder",
    )


def _inputs(scenario: Scenario, device: Any) -> tuple[Any, Any, Any]:
    """x (S, B, K), dy (S, B, N), W (N, K) in bf16: drawn on the CPU, so every rank holds the same."""
    import torch

    gen = torch.Generator().manual_seed(scenario.seed)
    seq, batch, k = scenario.shape
    n = scenario.out_features
    x = torch.randn(seq, batch, k, generator=gen, dtype=torch.float32)
    dy = torch.randn(seq, batch, n, generator=gen, dtype=torch.float32)
    w = torch.randn(n, k, generator=gen, dtype=torch.float32) / k**0.5
    return tuple(t.to(device=device, dtype=torch.bfloat16) for t in (x, dy, w))  # type: ignore[return-value]


def _inject(scenario: Scenario, rank: int, where: str) -> None:
    last = rank == scenario.world_size - 1
    if scenario.fault == "hang" and last and where == "before_sharded":
        time.sleep(HANG_SECONDS)
    if scenario.fault == "raise" and last and where == "before_sharded":
        raise RuntimeError(f"injected failure on rank {rank}")


def _gpu_state(device: str) -> dict[str, Any]:
    if device != "cuda":
        return {}
    import torch

    from benchmarks.harness.gpu_state import Nvml, nvml_index

    nvml = Nvml.open(nvml_index(torch.cuda.current_device()))
    return nvml.sample() if nvml else {}


def run_scenario(rank: int, world_size: int, scenario: Scenario) -> dict[str, Any]:
    """The rank function the launcher calls."""
    import torch
    import torch.distributed as dist

    from benchmarks.harness.distributed.rank_timing import samples_on_ranks
    from benchmarks.harness.numerics import max_abs_difference, relative_error

    report: dict[str, Any] = {"rank": rank, "seconds": {}}
    clock = time.perf_counter

    def mark(name: str, started: float) -> None:
        report["seconds"][name] = round(clock() - started, 3)

    with phase("setup"):
        t0 = clock()
        if world_size != scenario.world_size:
            raise ValueError(f"launched {world_size} ranks for a scenario of {scenario.world_size}")
        group = dist.group.WORLD
        device = torch.device("cuda", torch.cuda.current_device()) if scenario.device == "cuda" else "cpu"
        layers = _layers(scenario, group)
        x, dy, w = _inputs(scenario, device)
        shards = Shards(scenario)
        weight_rank = (rank + 1) % world_size if scenario.fault == "wrong_weight_shard" else rank
        # a slice along the last dimension is strided; a rank holds its shard as a tensor of its own
        x_local, dy_local = x[shards.input(rank)].contiguous(), dy[shards.output(rank)].contiguous()
        mark("setup", t0)

    with phase("reference"):
        t0 = clock()
        reference = layers.reference(w)
        expected = fwd_bwd(reference, layers.forward(reference), x, dy)
        expected_local = (
            expected[0][shards.output(rank)],
            expected[1][shards.input(rank)],
            expected[2][shards.weight(rank)],
        )
        del reference
        mark("reference", t0)

    with phase("sharded"):
        _inject(scenario, rank, "before_sharded")
        t0 = clock()
        eager = layers.sharded(w[shards.weight(weight_rank)])
        eager_forward = layers.forward(eager)
        got = fwd_bwd(eager, eager_forward, x_local, dy_local)
        report["rel_l2"] = {
            name: relative_error(a, e) for name, a, e in zip(TENSORS, got, expected_local, strict=True)
        }
        report["columnwise_gather"] = layers.gather_checks(eager, x, dy)
        mark("sharded", t0)

    timed_module, timed_forward, cudagraphs = eager, eager_forward, False
    if scenario.mode != "eager":
        with phase("compiled"):
            import torch._dynamo
            from torch._dynamo.utils import counters

            torch._dynamo.reset()
            counters.clear()
            compiled = layers.sharded(w[shards.weight(weight_rank)])
            compiled_forward = torch.compile(layers.forward(compiled), mode=scenario.mode, fullgraph=False)
            cudagraphs = scenario.mode == "reduce-overhead"
            if scenario.device == "cuda":
                torch.cuda.synchronize()
            t0 = clock()
            got_compiled = fwd_bwd(compiled, compiled_forward, x_local, dy_local, cudagraphs=cudagraphs)
            if scenario.device == "cuda":
                torch.cuda.synchronize()
            report["compile_seconds"] = clock() - t0
            breaks = {str(k): int(v) for k, v in counters["graph_break"].items()}
            report["graph_breaks"] = sum(breaks.values())
            report["graph_break_reasons"] = [reason.splitlines()[0][:200] for reason in list(breaks)[:5]]
            report["compiled_max_abs_diff"] = {
                name: max_abs_difference(a, e) for name, a, e in zip(TENSORS, got_compiled, got, strict=True)
            }
            timed_module, timed_forward = compiled, compiled_forward

    with phase("timing"):
        t0 = clock()
        state_before = _gpu_state(scenario.device)
        step = timed_fwd_bwd(timed_module, timed_forward, x_local, dy_local, cudagraphs)
        report["samples"] = samples_on_ranks(step, scenario.device, scenario.timing, group)
        report["gpu_state"] = [s for s in (state_before, _gpu_state(scenario.device)) if s]
        mark("timing", t0)
    return report

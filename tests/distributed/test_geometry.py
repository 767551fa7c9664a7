"""Which slice of the single-GPU tensors each rank holds: Megatron's tensor parallelism, replayed in
float64 with plain collectives (sum, concatenation), must give every rank exactly its slices."""

from __future__ import annotations

import pytest
import torch

from benchmarks.harness.distributed.scenario import Scenario, Shards


def _scenario(parallel: str, sp: bool, world: int, shape=(8, 2, 12), n=6) -> Scenario:
    return Scenario(
        backend="torch-ref",
        recipe="torch-ref",
        parallel_mode=parallel,
        sequence_parallel=sp,
        mode="eager",
        world_size=world,
        device="cpu",
        shape=shape,
        out_features=n,
    )


@pytest.mark.parametrize("world", [1, 2])
@pytest.mark.parametrize("sp", [False, True])
@pytest.mark.parametrize("parallel", ["column", "row"])
def test_each_rank_computes_its_slices_of_output_dgrad_and_wgrad(parallel, sp, world):
    sc = _scenario(parallel, sp, world)
    shards = Shards(sc)
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(sc.shape, generator=gen, dtype=torch.float64)
    w = torch.randn(sc.out_features, sc.shape[2], generator=gen, dtype=torch.float64)
    dy = torch.randn(*sc.shape[:2], sc.out_features, generator=gen, dtype=torch.float64)
    y, dx, dw = x @ w.t(), dy @ w, torch.einsum("sbn,sbk->nk", dy, x)
    ranks = range(world)
    seq_split = sp and world > 1

    def gather(parts):  # along the sequence, as the all-gather of sequence parallelism
        return torch.cat(parts, dim=0) if seq_split else parts[0]

    def scatter(total, rank):  # the reduce-scatter's share of a summed tensor
        return total[shards._seq(rank)] if seq_split else total

    for r in ranks:
        w_r = w[shards.weight(r)]
        if parallel == "column":
            x_total = gather([x[shards.input(q)] for q in ranks])
            y_r = x_total @ w_r.t()
            dx_r = scatter(sum(dy[shards.output(q)] @ w[shards.weight(q)] for q in ranks), r)
            dw_r = torch.einsum("sbn,sbk->nk", dy[shards.output(r)], x_total)
        else:
            y_r = scatter(sum(x[shards.input(q)] @ w[shards.weight(q)].t() for q in ranks), r)
            dy_total = gather([dy[shards.output(q)] for q in ranks])
            dx_r = dy_total @ w_r
            dw_r = torch.einsum("sbn,sbk->nk", dy_total, x[shards.input(r)])
        torch.testing.assert_close(y_r, y[shards.output(r)])
        torch.testing.assert_close(dx_r, dx[shards.input(r)])
        torch.testing.assert_close(dw_r, dw[shards.weight(r)])


def test_weight_shards_tile_the_weight_once():
    for parallel in ("column", "row"):
        sc = _scenario(parallel, True, 2)
        shards = Shards(sc)
        seen = torch.zeros(sc.out_features, sc.shape[2])
        for r in range(2):
            seen[shards.weight(r)] += 1
        assert torch.equal(seen, torch.ones_like(seen))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"parallel_mode": "diagonal"}, "parallel_mode must be one of"),
        ({"out_features": 7, "world_size": 2}, "out_features=7 does not split over 2 ranks"),
        ({"parallel_mode": "row", "shape": (8, 2, 9), "world_size": 2}, "in_features=9 does not split"),
        (
            {"sequence_parallel": True, "shape": (7, 2, 12), "world_size": 2},
            "sequence length 7 does not split",
        ),
        ({"fault": "gremlins"}, "fault must be one of"),
        ({"device": "tpu"}, "device must be cuda or cpu"),
        ({"world_size": 0}, "world_size must be at least 1"),
    ],
)
def test_a_scenario_that_cannot_be_sharded_says_why(kwargs, message):
    base = {
        "backend": "torch-ref",
        "recipe": "torch-ref",
        "parallel_mode": "column",
        "sequence_parallel": False,
        "mode": "eager",
        "world_size": 1,
        "device": "cpu",
        "shape": (8, 2, 12),
        "out_features": 6,
    }
    with pytest.raises(ValueError, match=message):
        Scenario(**{**base, **kwargs})


def test_a_single_rank_never_shards_the_sequence():
    sc = _scenario("column", True, 1)
    assert not sc.sequence_sharded
    assert Shards(sc).input(0) == (slice(None),) * 3

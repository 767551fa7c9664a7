"""Rank functions for the launcher tests: module level, so spawned ranks can import them by name."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path
from typing import Any

from benchmarks.harness.distributed.environment import NO_MULTICAST


def sum_ranks(rank: int, world_size: int, payload: Any) -> dict[str, Any]:
    """All-reduce of the ranks' numbers, and what the rank sees of its environment and group."""
    import torch
    import torch.distributed as dist

    t = torch.tensor([float(rank + 1)])
    dist.all_reduce(t)
    return {
        "rank": rank,
        "sum": t.item(),
        "world": dist.get_world_size(),
        "backend": dist.get_backend(),
        "env": {name: os.environ.get(name) for name in NO_MULTICAST},
        "payload": payload,
    }


def last_rank_hangs(rank: int, world_size: int, payload: Any) -> dict[str, Any]:
    """The last rank starts a child process, writes its pid, and never joins the collective."""
    import torch
    import torch.distributed as dist

    if rank == world_size - 1:
        child = subprocess.Popen(["sleep", "600"])
        Path(payload).write_text(str(child.pid))
        time.sleep(600)
    t = torch.ones(1)
    dist.all_reduce(t)
    return {"rank": rank}


def last_rank_raises(rank: int, world_size: int, payload: Any) -> dict[str, Any]:
    import torch
    import torch.distributed as dist

    if rank == world_size - 1:
        exc = ValueError(f"shard {rank} has the wrong shape")
        exc.phase = "sharded"  # type: ignore[attr-defined]
        raise exc
    dist.all_reduce(torch.ones(1))
    return {"rank": rank}


def last_rank_dies(rank: int, world_size: int, payload: Any) -> dict[str, Any]:
    import torch
    import torch.distributed as dist

    if rank == world_size - 1:
        os._exit(3)
    dist.all_reduce(torch.ones(1))
    return {"rank": rank}

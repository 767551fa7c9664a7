"""A module saved and loaded through torch.distributed.checkpoint: its buffers bit for bit and a forward
pass equal after the load, each a check; a save or load that raises is that step's error. One process,
or every rank of a process group at once (FSDP2), each comparing its own shards."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.harness import records
from benchmarks.harness.numerics import differing_buffers, max_abs_difference

# the recipes whose te.Linear is quantized at init and round-tripped, in one process and under FSDP2
RECIPES = ("fp8-delayed", "fp8-current", "fp8-block", "mxfp8", "nvfp4")


def dcp_round_trip(
    original: Any,
    fresh: Any,
    folder: Path,
    buffers: Callable[[Any], dict[str, Any]],
    forward: Callable[[Any], Any],
    distributed: bool = False,
) -> list[records.Check]:
    """Save `original`, load into `fresh` (built alike, other values), compare. `distributed`: every rank
    of the default process group calls this, with the same `folder`."""
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.api import CheckpointException  # a BaseException, not an Exception

    failures = (Exception, CheckpointException)
    try:
        dcp.save(original.state_dict(), checkpoint_id=str(folder), no_dist=not distributed)
    except failures as exc:  # a save that fails is the check's verdict
        return [records.from_exception("dcp_save", exc)]
    try:
        target = fresh.state_dict()
        dcp.load(target, checkpoint_id=str(folder), no_dist=not distributed)
        fresh.load_state_dict(target)
    except failures as exc:
        return [records.Check(check="dcp_save", status="pass"), records.from_exception("dcp_load", exc)]
    differing = differing_buffers(buffers(original), buffers(fresh))
    return [
        records.Check(
            check="dcp_buffers",
            status="fail_accuracy" if differing else "pass",
            metric="differing_buffers",
            value=float(len(differing)),
            tolerance=0.0,
            details={"differing": differing} if differing else None,
        ),
        records.compare(
            "dcp_forward", "max_abs_diff", max_abs_difference(forward(fresh), forward(original)), 0.0
        ),
    ]

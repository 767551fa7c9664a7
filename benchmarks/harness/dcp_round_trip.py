"""A module saved and loaded through torch.distributed.checkpoint (one process): its buffers bit for bit
and a forward pass equal after the load, each a check; a save or load that raises is that step's error."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.harness import records
from benchmarks.harness.numerics import differing_buffers, max_abs_difference


def dcp_round_trip(
    original: Any,
    fresh: Any,
    folder: Path,
    buffers: Callable[[Any], dict[str, Any]],
    forward: Callable[[Any], Any],
) -> list[records.Check]:
    """Save `original`, load into `fresh` (built alike, other values), compare."""
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.api import CheckpointException  # a BaseException, not an Exception

    failures = (Exception, CheckpointException)
    try:
        dcp.save(original.state_dict(), checkpoint_id=str(folder), no_dist=True)
    except failures as exc:  # a save that fails is the check's verdict
        return [records.from_exception("dcp_save", exc)]
    try:
        target = fresh.state_dict()
        dcp.load(target, checkpoint_id=str(folder), no_dist=True)
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

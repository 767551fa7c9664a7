"""The training suite's checkpoints: model and optimizer through torch.distributed.checkpoint (DCP), in one
process.

The model's state dict goes as it is, except TE's extra state (`*._extra_state`: a module's FP8 scaling
state, amax history and scales of delayed scaling, pickled into a uint8 tensor whose length depends on
what the module has run). DCP loads a tensor only into one of the same shape, and a freshly built module's
extra state is empty until its first forward, so the extra state travels as bytes, which DCP loads whatever
their length. The optimizer's state goes by parameter name (`get_optimizer_state_dict`), so it loads into
an optimizer of a freshly built model.

A checkpoint kept for a later release (`save_portable`) adds `tewatch-checkpoint.json`: who saved it
(TE and torch versions), after which step, and the model's shape, which a load checks first.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import os
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch

EXTRA_STATE_SUFFIX = "_extra_state"
META_FILE = "tewatch-checkpoint.json"
UNSAFE_PICKLE_ENV = "NVTE_ALLOW_UNSAFE_PICKLE_EXTRA_STATE"


class CheckpointMismatch(ValueError):
    """A checkpoint saved for another model shape, case or seed than the one loading it."""


def _extra_state_as_bytes(state: dict[str, Any]) -> dict[str, Any]:
    return {
        k: io.BytesIO(v.cpu().numpy().tobytes())
        if k.endswith(EXTRA_STATE_SUFFIX) and torch.is_tensor(v)
        else v
        for k, v in state.items()
    }


def _bytes_as_tensor(data: bytes) -> torch.Tensor:
    # torch.frombuffer refuses an empty buffer, and a module that ran no FP8 keeps an empty extra state
    return torch.frombuffer(bytearray(data), dtype=torch.uint8) if data else torch.empty(0, dtype=torch.uint8)


def _extra_state_as_tensors(state: dict[str, Any]) -> dict[str, Any]:
    return {k: _bytes_as_tensor(v.getvalue()) if isinstance(v, io.BytesIO) else v for k, v in state.items()}


@contextlib.contextmanager
def _trusted_extra_state() -> Iterator[None]:
    """TE 2.20 refuses to unpickle delayed scaling's extra state unless NVTE_ALLOW_UNSAFE_PICKLE_EXTRA_STATE
    is 1: the checkpoints loaded here are the case's own, or an earlier release's the user named."""
    before = os.environ.get(UNSAFE_PICKLE_ENV)
    os.environ[UNSAFE_PICKLE_ENV] = "1"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(UNSAFE_PICKLE_ENV, None)
        else:
            os.environ[UNSAFE_PICKLE_ENV] = before


def _state(model: torch.nn.Module, optimizer: torch.optim.Optimizer) -> dict[str, Any]:
    from torch.distributed.checkpoint.state_dict import get_optimizer_state_dict

    return {
        "model": _extra_state_as_bytes(model.state_dict()),
        "optimizer": get_optimizer_state_dict(model, optimizer),
    }


def save(model: torch.nn.Module, optimizer: torch.optim.Optimizer, folder: Path) -> None:
    import torch.distributed.checkpoint as dcp

    with warnings.catch_warnings():  # "assuming the intent is to save in a single process": it is
        warnings.simplefilter("ignore", UserWarning)
        dcp.save(_state(model, optimizer), checkpoint_id=str(folder), no_dist=True)


def load(model: torch.nn.Module, optimizer: torch.optim.Optimizer, folder: Path) -> None:
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.state_dict import set_optimizer_state_dict

    # the optimizer state's layout is read off the target optimizer, which torch initialises by a step of
    # learning rate 0 where it has no state yet, but only where no gradient is left (a graph capture's
    # warm-up may leave some): else nothing of the optimizer would load
    optimizer.zero_grad(set_to_none=True)
    state = _state(model, optimizer)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        dcp.load(state, checkpoint_id=str(folder), no_dist=True)
    with _trusted_extra_state():
        model.load_state_dict(_extra_state_as_tensors(state["model"]))
    set_optimizer_state_dict(model, optimizer, state["optimizer"])


@dataclasses.dataclass(frozen=True)
class Provenance:
    """What `tewatch-checkpoint.json` says of a kept checkpoint."""

    case: str  # "<backend>-<recipe>"
    step: int  # saved after this many optimizer steps
    shape: dict[str, Any]  # the TrainingShape's fields
    versions: dict[str, str | None]  # te, torch


def save_portable(
    model: torch.nn.Module, optimizer: torch.optim.Optimizer, folder: Path, provenance: Provenance
) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    save(model, optimizer, folder)
    (folder / META_FILE).write_text(json.dumps(dataclasses.asdict(provenance), indent=1, sort_keys=True))


def read_provenance(folder: Path) -> Provenance:
    try:
        data = json.loads((folder / META_FILE).read_text())
        return Provenance(
            case=str(data["case"]),
            step=int(data["step"]),
            shape=dict(data["shape"]),
            versions=dict(data["versions"]),
        )
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise CheckpointMismatch(f"{folder / META_FILE} is missing or unreadable: {exc}") from exc


def check_matches(provenance: Provenance, case: str, shape: dict[str, Any], steps: int) -> None:
    if provenance.case != case:
        raise CheckpointMismatch(f"the checkpoint is of {provenance.case}, not {case}")
    if provenance.shape != shape:
        differing = sorted(
            k for k in set(shape) | set(provenance.shape) if shape.get(k) != provenance.shape.get(k)
        )
        raise CheckpointMismatch(f"the checkpoint's model or run differs in {', '.join(differing)}")
    if not 0 < provenance.step < steps:
        raise CheckpointMismatch(
            f"the checkpoint was saved after step {provenance.step}, outside 1..{steps - 1}"
        )

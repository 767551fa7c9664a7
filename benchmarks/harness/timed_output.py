"""The output of the timed calls, checked: the last timed call's output against the first call's.

A case's checks run on its first call; a fast path that does its work once and skips it afterwards
passes them and reads as a large speed-up. So the call the timing repeats is watched: the first call's
output is copied, then poisoned in place (NaN for floating tensors, a byte pattern for the others), and
after the timing the last call's output is compared with the copy. A call that writes its output into
the same buffers every time must write them again (a skipped call leaves the poison); one that returns
fresh tensors must return the same values. Deterministic paths must match bit for bit; a stochastic one
(stochastic rounding) within its tolerance, after `comparable` maps the output to values (dequantizes).

Cost: one copy and one fill of the output per case, and a reference to the latest output held during
the timing; nothing is added between the timed calls but a Python call and an assignment.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from benchmarks.harness import records

CHECK = "timed_output"
POISON_BYTE = 0xA5


@dataclass(frozen=True)
class OutputCheck:
    """How a case's timed output is compared: bit for bit (tolerance 0) or by relative L2 error."""

    tolerance: float = 0.0
    # maps what the call returns to the tensors to compare (dequantized values of a stochastic path)
    comparable: Callable[[Any], Any] | None = None


def tensors_of(value: Any) -> list[Any]:
    """The tensors in a call's output: a tensor, sequences and dicts of them, dataclasses, objects
    holding tensors as attributes (quantized tensors, TE's reference results), in a stable order."""
    import torch

    if isinstance(value, torch.Tensor):
        return [value]
    if value is None or isinstance(value, str | bytes | int | float | bool):
        return []
    if isinstance(value, dict):
        return [t for key in sorted(value, key=str) for t in tensors_of(value[key])]
    if isinstance(value, list | tuple):
        return [t for item in value for t in tensors_of(item)]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return [t for f in dataclasses.fields(value) for t in tensors_of(getattr(value, f.name))]
    attributes = getattr(value, "__dict__", None) or {}
    return [attributes[key] for key in sorted(attributes) if isinstance(attributes[key], torch.Tensor)]


def poison(tensors: list[Any]) -> None:
    import torch

    with torch.no_grad():
        for t in tensors:
            target = t.detach()
            if target.is_floating_point():
                target.fill_(math.nan)
            elif target.dtype == torch.bool:
                target.fill_(True)
            elif target.is_contiguous():
                target.reshape(-1).view(torch.uint8).fill_(POISON_BYTE)
            else:
                target.fill_(POISON_BYTE)


class Watched:
    """`fn` as the timing calls it: keeps a copy of the first output (then poisons it) and the last."""

    def __init__(self, fn: Callable[[], Any], check: OutputCheck) -> None:
        self.fn = fn
        self.check = check
        self.first: list[Any] | None = None
        self.last: Any = None
        self.calls = 0

    def __call__(self) -> Any:
        out = self.fn()
        self.calls += 1
        if self.first is None:
            self.first = [t.detach().clone() for t in tensors_of(self._comparable(out))]
            poison(tensors_of(out))
        self.last = out
        return out

    def _comparable(self, out: Any) -> Any:
        return self.check.comparable(out) if self.check.comparable else out

    def verdict(self) -> records.Check:
        """The comparison of the last output with the first; releases both."""
        from benchmarks.harness.numerics import bytes_equal, relative_error

        first, last = self.first or [], tensors_of(self._comparable(self.last))
        self.first, self.last = None, None
        details = {"calls": self.calls, "tensors": len(first)}
        if self.calls < 2 or not first:
            return records.Check(check=CHECK, status="pass", reason="fewer than two calls or no output")
        if len(last) != len(first) or any(a.shape != b.shape for a, b in zip(first, last, strict=False)):
            return records.Check(
                check=CHECK,
                status="fail_accuracy",
                metric="shape_mismatch",
                value=1.0,
                tolerance=0.0,
                message="the last timed call returned other tensors than the first",
                details=details,
            )
        if self.check.tolerance == 0:
            differing = sum(
                not bytes_equal(a.reshape(-1), b.reshape(-1)) for a, b in zip(first, last, strict=True)
            )
            return records.Check(
                check=CHECK,
                status="pass" if differing == 0 else "fail_accuracy",
                metric="differing_tensors",
                value=float(differing),
                tolerance=0.0,
                details=details,
            )
        worst = max(relative_error(b, a) for a, b in zip(first, last, strict=True))
        return records.compare(CHECK, "rel_l2", worst, self.check.tolerance, **details)

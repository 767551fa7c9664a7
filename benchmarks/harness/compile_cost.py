"""What torch.compile costs a compiled case: the first compiled call's seconds (its compile) and the graph
breaks Dynamo counted, from Dynamo's caches and counters reset just before (`compile_seconds`,
`graph_breaks`). Graph breaks are deterministic: the same code and inputs break the same graphs."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import Any

REASONS_KEPT = 10


class CompileCost:
    """Created right before `torch.compile`: resets Dynamo and its counters."""

    def __init__(self, device: str) -> None:
        import torch._dynamo
        from torch._dynamo.utils import counters

        torch._dynamo.reset()
        counters.clear()
        self.device = device
        self.seconds: float | None = None

    @contextlib.contextmanager
    def first_call(self) -> Iterator[None]:
        """Times the block (the first compiled call), the device's queued work included."""
        self._synchronize()
        started = time.perf_counter()
        yield
        self._synchronize()
        self.seconds = time.perf_counter() - started

    def _synchronize(self) -> None:
        if self.device == "cuda":
            import torch

            torch.cuda.synchronize()

    @staticmethod
    def graph_breaks() -> dict[str, int]:
        """Dynamo's graph-break reasons since the reset, each with its count."""
        from torch._dynamo.utils import counters

        return {str(reason): int(count) for reason, count in counters["graph_break"].items()}

    def write(self, record: Any) -> None:
        """`compile_seconds` (when the first call was timed) and `graph_breaks` into a case record."""
        if self.seconds is not None:
            record.metric("compile_seconds", self.seconds, "seconds")
        record.metric("graph_breaks", float(sum(self.graph_breaks().values())), "count")

    def reasons(self) -> list[str]:
        return list(self.graph_breaks())[:REASONS_KEPT]

"""Metric families whose values identical code does not reproduce, so a single pair of runs decides nothing.

Bytes and error values are otherwise judged on one pair of runs (tewatch.detect.memory, drift): identical
code gave them equal to the byte and bit (tests/fixtures/h200-memnum-*). The families below did not, on an
H200 A/A (the same code measured twice in separate processes, TE 2.20.2):

- reserved bytes: training.TrainSteps te fp8-current graphed reserved 1802 MiB in the base and 1930 MiB in
  the A/A arm (+128 MiB, +7.1 %) while its allocated bytes were equal; what the caching allocator keeps is
  not what the code needs.
- offloaded vs plain: offload.CpuOffloadTransformerLayer compares two executions, each running TE's
  attention (whose backward may be nondeterministic) and, for fp8-current, each its own scaling. Its dgrad
  rel-L2 was 0.00286 (base) and 0.121 (A/A), wgrad max-abs 16 and 343, SQNR 50.9 and 18.4 dB; bf16 dgrad
  max-abs 1.25 and 1, wgrad max-abs 20 and 16.

A metric of these families is judged only against a band learned from runs of identical code; without one
(a single pair, no A/B rounds) a change is inconclusive, with the family's reason.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class NoiseFamily:
    name: str
    metrics: re.Pattern[str]  # the metric names (the benchmark's last part) it holds, matched whole
    unlearned: str  # why a change is inconclusive while no runs of identical code have been seen

    def holds(self, metric: str) -> bool:
        return self.metrics.fullmatch(metric) is not None


RESERVED_BYTES = NoiseFamily(
    "reserved bytes",
    re.compile(r"peak_reserved_bytes"),
    "no runs of identical code yet: reserved bytes follow the allocator",
)
OFFLOADED_VS_PLAIN = NoiseFamily(
    "offloaded vs plain",
    re.compile(r"offloaded_(dgrad|wgrad)_vs_plain_(max_abs|rel_l2|sqnr_db)"),
    "no runs of identical code yet: offloaded and plain execution each run attention and scaling of "
    "their own",
)
FAMILIES = (RESERVED_BYTES, OFFLOADED_VS_PLAIN)


def noise_family(metric: str) -> NoiseFamily | None:
    """The family a metric belongs to, None for one that identical code reproduces exactly."""
    return next((family for family in FAMILIES if family.holds(metric)), None)

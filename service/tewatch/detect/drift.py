"""Numerics: a check's error value (max-abs, relative L2, SQNR against its reference) between two runs.

A verdict says pass or fail against a tolerance; a change that moves an error by a few percent inside the
tolerance leaves it `pass`. The error values themselves are recorded on every run (docs/records.md), and
the inputs are fixed by seed, so:

- a *deterministic* metric (every run of identical code gave the same value, as every error metric of the
  H200 fixtures tests/fixtures/h200-memnum-* did, to the last bit) changes only when the code does: any
  difference between base and head is real;
- a *non-deterministic* one (stochastic rounding, atomics in a reduction) moves between runs of identical
  code: its band is NOISE_MULTIPLE times the largest relative spread such runs showed, and only a change
  beyond the band counts;
- a metric of a family identical code does not reproduce (offloaded vs plain execution,
  tewatch.detect.noise_families) is judged against its band only once one was learned: before that, on a
  single pair, any difference is `inconclusive`, never drift.

A real change that makes the error worse (a larger max-abs or relative L2, a smaller SQNR) is `drift`,
one that makes it better `improvement`, with its size: "rel-L2 of output vs fp32 0.0375 -> 0.0427,
+13.7 %, tolerance 0.1".
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from tewatch.detect.noise_families import NoiseFamily

NOISE_MULTIPLE = 4.0
# the error kinds a check records, as metric name suffixes, with their names in words
KINDS = {"max_abs": "max-abs", "rel_l2": "rel-L2", "sqnr_db": "SQNR dB"}
HIGHER_IS_BETTER = {"sqnr_db"}


class DriftVerdict(str, enum.Enum):
    drift = "drift"  # the error got worse
    improvement = "improvement"
    unchanged = "unchanged"
    inconclusive = "inconclusive"  # moved, in a family whose noise no runs of identical code taught yet


@dataclass(frozen=True)
class ErrorMetric:
    """An error metric's name taken apart: `output_vs_fp32_rel_l2` is the rel-L2 of `output` vs `fp32`."""

    name: str
    what: str
    reference: str
    kind: str

    @classmethod
    def parse(cls, name: str) -> ErrorMetric | None:
        for kind in KINDS:
            if name.endswith("_" + kind):
                what, sep, reference = name.removesuffix("_" + kind).rpartition("_vs_")
                if sep and what and reference:
                    return cls(name, what, reference, kind)
        return None

    @property
    def label(self) -> str:
        return f"{KINDS[self.kind]} of {self.what.replace('_', ' ')} vs {self.reference}"


@dataclass(frozen=True)
class ErrorBand:
    """How far identical code moved an error metric: 0 when it never moved (deterministic)."""

    share: float
    groups: int

    @property
    def deterministic(self) -> bool:
        return self.share == 0.0


def spreads(groups: Iterable[Sequence[float]]) -> list[tuple[float, float]]:
    """(width, |median|) of each group of two or more values measured by identical code (one series
    across A/A arms, rounds or a stretch of branch history)."""
    found = []
    for group in groups:
        values = np.asarray(group, dtype=float)
        if values.size >= 2:
            found.append((float(np.ptp(values)), abs(float(np.median(values)))))
    return found


def learn_error_band(groups: Iterable[Sequence[float]]) -> ErrorBand:
    """The largest relative spread of groups of values each measured by identical code."""
    found = spreads(groups)
    share = max([0.0, *(width / middle if middle else float("inf") for width, middle in found if width)])
    return ErrorBand(share, len(found))


@dataclass(frozen=True)
class Drift:
    metric: ErrorMetric
    base: float
    head: float
    change: float  # relative: head / base - 1 (head - base where base is 0)
    tolerance: float | None
    verdict: DriftVerdict
    reason: str = ""  # why an inconclusive move is one

    def describe(self) -> str:
        """`rel-L2 of output vs fp32 0.0375 -> 0.0427, +13.7 %, tolerance 0.1`, and the reason of an
        inconclusive move after a semicolon"""
        change = f"{self.change:+.1%}".replace("%", " %") if self.base else f"{self.change:+.3g}"
        text = f"{self.metric.label} {self.base:.3g} -> {self.head:.3g}, {change}"
        text += f", tolerance {self.tolerance:g}" if self.tolerance is not None else ""
        return text + (f"; {self.reason}" if self.reason else "")


def error_drift(
    metric: ErrorMetric,
    base: float,
    head: float,
    band: ErrorBand,
    tolerance: float | None = None,
    family: NoiseFamily | None = None,
) -> Drift:
    """One pair of runs: did the error metric move beyond what identical code does, and which way? A metric
    of a `family` that identical code does not reproduce needs a band learned from at least one group."""
    difference = head - base
    change = difference / abs(base) if base else difference
    moved = difference != 0 if band.deterministic else abs(change) > NOISE_MULTIPLE * band.share
    reason = ""
    if not moved:
        verdict = DriftVerdict.unchanged
    elif family is not None and not band.groups:
        verdict, reason = DriftVerdict.inconclusive, family.unlearned
    else:
        better = difference > 0 if metric.kind in HIGHER_IS_BETTER else difference < 0
        verdict = DriftVerdict.improvement if better else DriftVerdict.drift
    return Drift(metric, base, head, change, tolerance, verdict, reason)

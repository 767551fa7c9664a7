"""Memory: a change of bytes between two runs, and a leak, judged against the noise of bytes themselves.

Bytes are counts, not samples. The same code on the same inputs holds the same bytes, up to the caching
allocator's rounding (512-byte blocks; segments of 2 MiB, large ones rounded to 2 MiB): on an H200 every
memory metric of six processes of one code, on two machines, was the same to the byte
(tests/fixtures/h200-memnum-*). So their noise is learned from runs of identical code (an A/A, its rounds,
a branch's runs between two changes), never taken from timing noise, and a single pair of runs decides:

- `compare_bytes`: a change is *real* when it exceeds the noise margin (NOISE_MULTIPLE times the largest
  difference seen between runs of identical code, in bytes and as a share, and never less than one
  allocator block); it is *reported* when it is also at least MIN_REPORT_BYTES (1 MiB) or MIN_REPORT_SHARE
  (1 %) of the base. More bytes is a regression, fewer an improvement; a reportable size within the noise
  is inconclusive, and so is any reportable change of a family identical code does not reproduce
  (reserved bytes, tewatch.detect.noise_families) while no runs of identical code taught its noise.
- `leak_finding`: the fitted slope of the allocated bytes after each training step (bytes per step) is a
  leak when it exceeds its noise: NOISE_MULTIPLE times the fit's standard error and the largest slope of
  identical code, and at least one allocator block per step.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from tewatch.detect.drift import spreads
from tewatch.detect.noise_families import NoiseFamily

ALLOCATOR_BLOCK_BYTES = 512
MIB = 2**20
MIN_REPORT_BYTES = MIB
MIN_REPORT_SHARE = 0.01
NOISE_MULTIPLE = 4.0


class BytesVerdict(str, enum.Enum):
    regression = "regression"  # more bytes
    improvement = "improvement"  # fewer bytes
    unchanged = "unchanged"
    inconclusive = "inconclusive"  # a reportable size, but within the noise of identical code, or unlearned


@dataclass(frozen=True)
class BytesNoise:
    """The largest difference between two runs of identical code, in bytes and as a share of the value."""

    bytes: float
    share: float
    groups: int  # groups of identical code it was learned from

    def margin(self, base: float) -> float:
        """The change that identical code does not reach: never less than one allocator block."""
        return max(
            ALLOCATOR_BLOCK_BYTES, NOISE_MULTIPLE * self.bytes, NOISE_MULTIPLE * self.share * abs(base)
        )


def learn_bytes_noise(groups: Iterable[Sequence[float]]) -> BytesNoise:
    """Noise from groups of values each measured by identical code (one series across A/A arms, rounds or a
    stretch of branch history): the largest spread within a group, absolute and relative to its median."""
    found = spreads(groups)
    spread = max([0.0, *(width for width, _ in found)])
    share = max([0.0, *(width / middle for width, middle in found if middle)])
    return BytesNoise(spread, share, len(found))


@dataclass(frozen=True)
class BytesChange:
    base: float
    head: float
    change: float  # bytes, head - base
    share: float  # change / base (0 where base is 0 and nothing changed)
    margin: float  # bytes identical code stays within
    verdict: BytesVerdict
    reason: str = ""  # why an inconclusive change is one, where the noise was not learned

    def describe(self, metric: str) -> str:
        """`setup_allocated_bytes 145.0 MiB -> 209.0 MiB, +64.0 MiB (+44.1 %)`"""
        sign = "+" if self.change >= 0 else "-"
        share = f" ({self.share:+.1%})".replace("%", " %") if self.base else ""
        return (
            f"{metric} {self.base / MIB:.1f} MiB -> {self.head / MIB:.1f} MiB, "
            f"{sign}{abs(self.change) / MIB:.1f} MiB{share}"
        )


def compare_bytes(
    base: float, head: float, noise: BytesNoise, family: NoiseFamily | None = None
) -> BytesChange:
    """One pair of runs: is the head's byte count a change, and one worth reporting? A metric of a `family`
    that identical code does not reproduce needs noise learned from at least one group to be a change."""
    change = head - base
    share = change / base if base else (0.0 if change == 0 else float("inf"))
    margin = noise.margin(base)
    reportable = abs(change) >= MIN_REPORT_BYTES or abs(share) >= MIN_REPORT_SHARE
    reason = ""
    if not reportable:
        verdict = BytesVerdict.unchanged
    elif family is not None and not noise.groups:
        verdict, reason = BytesVerdict.inconclusive, family.unlearned
    elif abs(change) <= margin:
        verdict = BytesVerdict.inconclusive
    else:
        verdict = BytesVerdict.regression if change > 0 else BytesVerdict.improvement
    return BytesChange(base, head, change, share, margin, verdict, reason)


@dataclass(frozen=True)
class LeakFinding:
    slope: float  # bytes per step, fitted
    threshold: float  # bytes per step the slope must exceed
    leak: bool

    def describe(self) -> str:
        """`leak 1.00 MiB/step (threshold 512 B/step)`"""
        verdict = "leak" if self.leak else "no leak"
        return f"{verdict} {self.slope / MIB:.2f} MiB/step (threshold {self.threshold:.0f} B/step)"


def leak_finding(slope: float, stderr: float, same_code_slopes: Sequence[float] = ()) -> LeakFinding:
    """A slope above its noise: the fit's own standard error and the slopes identical code showed."""
    seen = max((abs(s) for s in same_code_slopes), default=0.0)
    threshold = max(ALLOCATOR_BLOCK_BYTES, NOISE_MULTIPLE * stderr, NOISE_MULTIPLE * seen)
    return LeakFinding(slope, threshold, slope > threshold)

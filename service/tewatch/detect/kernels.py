"""Kernels: what a case call runs, compared between two runs, and which kernels account for a time change.

The suites record, per case and run, a table of normalised kernel names with their launches and device
time in one case call, and the call's launches, host-device synchronisations and memory copies
(docs/kernels.md). Counts are not timings: the same code launches the same kernels the same number of
times, so a single pair of tables decides, as bytes do (tewatch.detect.memory):

- `kernel_set_changes`: a kernel that appears or disappears, a kernel's calls per call, the call's
  launches, synchronisations or copies per call, each beyond COUNT_TOLERANCE (a quarter of a launch per
  call: a kernel that runs in a few of the profiled calls only, a lazy initialisation, is no part of the
  call), and a graph break count that changes at all (torch.compile's breaks are deterministic).
- Expected noise: autotuned families. cuBLAS heuristics and Triton's autotuner may pick another variant
  of one kernel family from one process to the next; the suites fold launch-specific numbers out of the
  names, but two variants keep two names. Names are one family when they are equal once template
  arguments and every run of digits are taken out (`family_of`). A family is *autotuned* when its
  names alternate among tables of identical code (an A/A's arms, the base's rounds, a branch's earlier
  runs: `learn_autotuned`); its names then count as one kernel, the family, whose calls and time are
  summed. A family seen with one name only is not noise: a variant that appears in its place is a change.
- `attribute`: given a case's time change and both tables, the kernels whose device time moved with it,
  largest first, until they account for ATTRIBUTED_SHARE of it (at most MAX_ATTRIBUTED):
  "nvte_quantize_kernel +38 us of +41 us".
- `suspect_speedup`: a speed-up that also changes the kernel list, whose throughput beats the
  bytes-moved floor (share of the measured ceiling above 1), or whose timed calls' output was wrong (the
  case's `timed_output` check failed: a call that skips its work), is suspect, not an improvement.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable
from dataclasses import dataclass

COUNT_TOLERANCE = 0.25  # launches per case call
ATTRIBUTED_SHARE = 0.8
MAX_ATTRIBUTED = 3
CEILING = 1.0  # share_of_ceiling: the measured floor for the bytes moved

_TEMPLATE = re.compile(r"<[^<>]*>")
_DIGITS = re.compile(r"\d+")


@dataclass(frozen=True)
class Kernel:
    name: str
    calls_per_call: float
    total_seconds: float  # its device time in one case call


@dataclass(frozen=True)
class KernelTable:
    """One case's profiler pass in one run."""

    kernels: tuple[Kernel, ...]
    launches_per_call: float | None = None
    syncs_per_call: float | None = None
    copies_per_call: float | None = None
    graph_breaks: float | None = None

    def names(self) -> set[str]:
        return {k.name for k in self.kernels}


def family_of(name: str) -> str:
    """The name with template arguments and digits taken out: the variants of one kernel share it."""
    previous = None
    while previous != name:  # nested templates, innermost first
        previous, name = name, _TEMPLATE.sub("", name)
    return _DIGITS.sub("#", name)


def learn_autotuned(same_code: Iterable[KernelTable]) -> frozenset[str]:
    """Families whose names differ among tables of identical code (present in each, by another name)."""
    seen: dict[str, set[frozenset[str]]] = {}
    for table in same_code:
        members: dict[str, set[str]] = {}
        for name in table.names():
            members.setdefault(family_of(name), set()).add(name)
        for family, names in members.items():
            seen.setdefault(family, set()).add(frozenset(names))
    return frozenset(family for family, variants in seen.items() if len(variants) > 1)


def _folded(table: KernelTable, autotuned: frozenset[str]) -> dict[str, Kernel]:
    """Name -> kernel, an autotuned family's variants summed under the family."""
    found: dict[str, Kernel] = {}
    for kernel in table.kernels:
        family = family_of(kernel.name)
        key = family if family in autotuned else kernel.name
        if key in found:
            other = found[key]
            kernel = Kernel(
                key,
                other.calls_per_call + kernel.calls_per_call,
                other.total_seconds + kernel.total_seconds,
            )
        found[key] = Kernel(key, kernel.calls_per_call, kernel.total_seconds)
    return found


class ChangeKind(str, enum.Enum):
    appeared = "appeared"
    disappeared = "disappeared"
    calls = "calls"  # a kernel's calls per case call
    launches = "launches"
    syncs = "syncs"
    copies = "copies"
    graph_breaks = "graph_breaks"


@dataclass(frozen=True)
class KernelSetChange:
    kind: ChangeKind
    name: str  # the kernel (or family), or what was counted
    base: float  # per case call; 0 for a kernel that appeared
    head: float

    def describe(self) -> str:
        """`appeared: nvte_quantize_kernel (2 per call)`, `syncs per call 0 -> 1`."""
        if self.kind is ChangeKind.appeared:
            return f"appeared: {self.name} ({self.head:g} per call)"
        if self.kind is ChangeKind.disappeared:
            return f"disappeared: {self.name} ({self.base:g} per call)"
        if self.kind is ChangeKind.calls:
            return f"{self.name}: {self.base:g} -> {self.head:g} calls per call"
        if self.kind is ChangeKind.graph_breaks:
            return f"graph breaks {self.base:g} -> {self.head:g}"
        return f"{self.kind.value} per call {self.base:g} -> {self.head:g}"


def _moved(base: float, head: float, tolerance: float) -> bool:
    return abs(head - base) > tolerance


def kernel_set_changes(
    base: KernelTable, head: KernelTable, autotuned: frozenset[str] = frozenset()
) -> list[KernelSetChange]:
    """What the head's call runs differently from the base's: kernels first (disappeared, appeared,
    calls), then the call's launches, syncs and copies, then graph breaks."""
    before, after = _folded(base, autotuned), _folded(head, autotuned)
    changes = []
    for name in sorted(before.keys() - after.keys()):
        if before[name].calls_per_call > COUNT_TOLERANCE:
            changes.append(KernelSetChange(ChangeKind.disappeared, name, before[name].calls_per_call, 0.0))
    for name in sorted(after.keys() - before.keys()):
        if after[name].calls_per_call > COUNT_TOLERANCE:
            changes.append(KernelSetChange(ChangeKind.appeared, name, 0.0, after[name].calls_per_call))
    for name in sorted(before.keys() & after.keys()):
        was, now = before[name].calls_per_call, after[name].calls_per_call
        if _moved(was, now, COUNT_TOLERANCE):
            changes.append(KernelSetChange(ChangeKind.calls, name, was, now))
    for kind in (ChangeKind.launches, ChangeKind.syncs, ChangeKind.copies):
        was, now = getattr(base, f"{kind.value}_per_call"), getattr(head, f"{kind.value}_per_call")
        if was is not None and now is not None and _moved(was, now, COUNT_TOLERANCE):
            changes.append(KernelSetChange(kind, kind.value, was, now))
    was_broken, now_broken = base.graph_breaks, head.graph_breaks
    if was_broken is not None and now_broken is not None and was_broken != now_broken:
        changes.append(KernelSetChange(ChangeKind.graph_breaks, "graph breaks", was_broken, now_broken))
    return changes


def seconds_text(seconds: float, signed: bool = True) -> str:
    """`+38 us`, `-1.2 ms`, `+3.4 s`: three significant figures at most, in the unit that fits."""
    size = abs(seconds)
    unit, scale = next(
        ((u, f) for u, f in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)) if size >= f), ("ns", 1e-9)
    )
    text = f"{seconds / scale:+.3g}" if signed else f"{seconds / scale:.3g}"
    return f"{text} {unit}"


@dataclass(frozen=True)
class Share:
    name: str
    change: float  # seconds per case call, head - base
    share: float  # of the case's time change


@dataclass(frozen=True)
class Attribution:
    change: float  # the case's time change, seconds per call
    kernels: tuple[Share, ...]
    kernel_change: float  # every kernel's device time change, summed

    def describe(self) -> str:
        """`nvte_quantize_kernel +38 us of +41 us`; the rest named when kernels leave most of it."""
        total = seconds_text(self.change)
        if not self.kernels:
            return f"no kernel's time moved with {total} (kernels {seconds_text(self.kernel_change)})"
        parts = ", ".join(f"{k.name} {seconds_text(k.change)}" for k in self.kernels)
        text = f"{parts} of {total}"
        if self.change and abs(self.kernel_change / self.change) < 0.5:
            text += f" (kernels {seconds_text(self.kernel_change)} in all: the rest is the host's)"
        return text


def attribute(
    change: float, base: KernelTable, head: KernelTable, autotuned: frozenset[str] = frozenset()
) -> Attribution:
    """The kernels whose device time moved in the direction of `change` (seconds per call), largest
    first, until they account for ATTRIBUTED_SHARE of it, MAX_ATTRIBUTED at most."""
    before, after = _folded(base, autotuned), _folded(head, autotuned)
    moves = {
        name: (after[name].total_seconds if name in after else 0.0)
        - (before[name].total_seconds if name in before else 0.0)
        for name in before.keys() | after.keys()
    }
    same_way = sorted(
        ((name, d) for name, d in moves.items() if d * change > 0), key=lambda item: (-abs(item[1]), item[0])
    )
    chosen: list[Share] = []
    covered = 0.0
    for name, moved in same_way[:MAX_ATTRIBUTED]:
        if change and abs(covered / change) >= ATTRIBUTED_SHARE:
            break
        chosen.append(Share(name, moved, moved / change))
        covered += moved
    return Attribution(change, tuple(chosen), sum(moves.values()))


def suspect_speedup(
    kernel_set_changed: bool, share_of_ceiling: float | None, output_wrong: bool = False
) -> str | None:
    """Why a speed-up is suspect rather than an improvement, or None."""
    reasons = []
    if output_wrong:
        reasons.append("its timed output was wrong")
    if kernel_set_changed:
        reasons.append("the kernel list changed")
    if share_of_ceiling is not None and share_of_ceiling > CEILING:
        reasons.append(f"{share_of_ceiling:.2f} of the bytes-moved ceiling")
    return " and ".join(reasons) or None

"""What makes a commit good or bad. Each judge first reads the two endpoints (and refuses them when they
do not differ as asked), then calls every measured commit `good`, `bad` or `skip`, with its evidence.

- correctness: the cases whose verdict differs between the endpoints; a commit is bad when one of them has
  the bad endpoint's verdict, good when all have the good endpoint's, skip otherwise (a third verdict).
- performance: the series the pull-request comparer (tewatch.detect.compare) finds changed between the
  endpoints' A/B rounds; a commit, measured in A/B rounds against the good endpoint, is bad when one of
  them changed the same way, good when the comparer calls the others unchanged, skip otherwise.
- value: any tracked value (a metric or a timing's median) that differs by `min_change` between the
  endpoints; a commit is bad when one of those values is nearer the bad endpoint's (in log ratio).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tewatch.bisect.measurements import CaseMeasurement
from tewatch.bisect.search import Verdict

if TYPE_CHECKING:  # the comparer imports scipy (a second of every CLI start): loaded when a judge runs
    from tewatch.detect.compare import ComparePair, CompareVerdict, Comparison

Cases = Mapping[str, CaseMeasurement]
JUDGES = ("correctness", "performance", "value")


class NoDifference(Exception):
    """The endpoints do not differ as asked; the message says how they compare."""


@dataclass(frozen=True)
class Judgement:
    verdict: Verdict
    evidence: dict[str, Any]


@dataclass
class CorrectnessJudge:
    flips: dict[str, tuple[str, str]] = field(default_factory=dict)  # case id -> (good's, bad's status)

    def endpoints(self, good: Cases, bad: Cases) -> dict[str, Any]:
        self.flips = {
            case: (good[case].status, bad[case].status)
            for case in sorted(good.keys() & bad.keys())
            if good[case].status != bad[case].status
        }
        if not self.flips:
            statuses = sorted({bad[c].status for c in bad} | {good[c].status for c in good})
            raise NoDifference(
                f"no selected case's verdict differs between the endpoints ({len(bad)} cases, "
                f"verdicts: {', '.join(statuses) or 'none'})"
            )
        return {
            case: {"good": g, "bad": b, "message": bad[case].message} for case, (g, b) in self.flips.items()
        }

    def judge(self, measured: Cases) -> Judgement:
        seen = {case: measured.get(case) for case in self.flips}
        evidence = {
            case: {"status": m.status if m else "missing", "message": m.message if m else ""}
            for case, m in seen.items()
        }
        if any(m is not None and m.status == self.flips[case][1] for case, m in seen.items()):
            return Judgement(Verdict.bad, evidence)
        if all(m is not None and m.status == self.flips[case][0] for case, m in seen.items()):
            return Judgement(Verdict.good, evidence)
        return Judgement(Verdict.skip, evidence)


def _pairs(base: Cases, head: Cases, keys: list[tuple[str, str]]) -> list[ComparePair]:
    from tewatch.detect.compare import ComparePair, Side

    pairs = []
    for case, series in keys:
        sides = []
        for cases in (base, head):
            found = cases.get(case)
            samples = found.samples.get(series, []) if found else []
            sizes = found.round_sizes.get(series) if found else None
            sides.append(Side(samples, sizes if sizes and sum(sizes) == len(samples) else None))
        paired = sides[0].round_sizes is not None and sides[1].round_sizes is not None
        measured = base.get(case) or head[case]
        pairs.append(
            ComparePair(
                sides[0],
                sides[1],
                paired=paired,
                family=series_family(measured.benchmarks[0], series),
                group=measured.backend or None,
            )
        )
    return pairs


def series_family(benchmark: str, series: str) -> str:
    """The series' benchmark as the service names it (`gemm.Gemm.kernel_seconds` beside
    `gemm.Gemm.track_seconds`): event and kernel time are different noise and inform only their own kind."""
    return f"{benchmark.rsplit('.', 1)[0]}.{series}"


@dataclass
class PerformanceJudge:
    # (case, series) -> the endpoints' verdict and effect (head / base - 1)
    changed: dict[tuple[str, str], tuple[CompareVerdict, float]] = field(default_factory=dict)

    def _compare(self, base: Cases, head: Cases, keys: list[tuple[str, str]]) -> dict[tuple[str, str], Any]:
        from tewatch.detect.compare import compare_sweep

        found = compare_sweep(_pairs(base, head, keys))
        return dict(zip(keys, found, strict=True))

    def endpoints(self, good: Cases, bad: Cases) -> dict[str, Any]:
        keys = sorted(
            (case, series)
            for case in good.keys() & bad.keys()
            for series in good[case].samples.keys() & bad[case].samples.keys()
        )
        from tewatch.detect.compare import CompareVerdict

        compared = self._compare(good, bad, keys)
        self.changed = {
            key: (c.verdict, c.effect)
            for key, c in compared.items()
            if c.verdict in (CompareVerdict.regression, CompareVerdict.improvement)
        }
        if not self.changed:
            verdicts = sorted({c.verdict.value for c in compared.values()})
            raise NoDifference(
                f"the comparer finds no series changed between the endpoints ({len(keys)} series: "
                f"{', '.join(verdicts) or 'none timed'})"
            )
        return _comparisons(compared, self.changed)

    def judge(self, base: Cases, head: Cases) -> Judgement:
        """Bad when a changed series changed the same way; good when every one is unchanged, or its
        interval lies on the good side of half the endpoints' step; skip otherwise."""
        compared = self._compare(base, head, list(self.changed))
        evidence = _comparisons(compared, self.changed)
        if any(compared[key].verdict is way for key, (way, _) in self.changed.items()):
            return Judgement(Verdict.bad, evidence)
        if all(_on_good_side(compared[key], step) for key, (_, step) in self.changed.items()):
            return Judgement(Verdict.good, evidence)
        return Judgement(Verdict.skip, evidence)


def _on_good_side(found: Comparison, step: float) -> bool:
    from tewatch.detect.compare import CompareVerdict

    if found.verdict is CompareVerdict.unchanged:
        return True
    half = step / 2
    return found.ci_high < half if step > 0 else found.ci_low > half


def _comparisons(
    compared: Mapping[tuple[str, str], Any], keys: Mapping[tuple[str, str], Any]
) -> dict[str, Any]:
    return {
        f"{case} {series}": {
            "verdict": compared[(case, series)].verdict.value,
            "effect": _finite(compared[(case, series)].effect),
            "baseline": _finite(compared[(case, series)].baseline),
            "head": _finite(compared[(case, series)].head),
        }
        for case, series in keys
    }


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


@dataclass
class ValueJudge:
    name: str
    min_change: float = 0.05
    levels: dict[str, tuple[float, float]] = field(default_factory=dict)  # case id -> (good's, bad's)

    def endpoints(self, good: Cases, bad: Cases) -> dict[str, Any]:
        self.levels = {}
        for case in sorted(good.keys() & bad.keys()):
            low, high = good[case].values.get(self.name), bad[case].values.get(self.name)
            if low is None or high is None or low <= 0 or high <= 0:
                continue
            if abs(math.log(high / low)) >= math.log1p(self.min_change):
                self.levels[case] = (low, high)
        if not self.levels:
            raise NoDifference(
                f"no selected case's {self.name!r} differs by {self.min_change:.0%} or more between the endpoints"
            )
        return {case: {"good": g, "bad": b} for case, (g, b) in self.levels.items()}

    def judge(self, measured: Cases) -> Judgement:
        evidence: dict[str, Any] = {}
        nearer_bad = missing = 0
        for case, (low, high) in self.levels.items():
            value = measured[case].values.get(self.name) if case in measured else None
            evidence[case] = {"value": value, "good": low, "bad": high}
            if value is None or value <= 0:
                missing += 1
            elif abs(math.log(value / high)) < abs(math.log(value / low)):
                nearer_bad += 1
        if nearer_bad:
            return Judgement(Verdict.bad, evidence)
        return Judgement(Verdict.skip if missing else Verdict.good, evidence)

"""A pull request's samples against its merge base's, one case at a time.

Within one process, samples are tight; between processes the level moves (h200-te-probe.md: 2-8 % CV of
process medians). A rank test on samples alone would call two processes of the same code different, so
the interval of the change combines both: the Hodges-Lehmann shift of log samples with its
distribution-free interval (Mann-Whitney), widened by the run-to-run noise measured on the base branch's
history of the same series. Without history that noise is unknown; it is taken as the largest of a
floor, the spread of either run's own samples (a run whose samples scatter by 30 %, a host-bound 20 us
call, cannot promise that the next run's level is closer than that) and the spread of the level changes
of the same benchmark's other cases in this comparison. The last one catches processes whose samples are
tight but whose levels differ: on one H200, two runs of the same code moved te.Linear cases by up to
-29 % and +45 % (robust spread 14 %) while quantize cases moved by 0.2 %. It is a robust spread (scaled
median absolute deviation about the family's median change), so a change of every case of a benchmark by
the same amount, or of fewer than half of its cases, does not raise it. Verdicts:

- regression / improvement: significant after Benjamini-Hochberg across the sweep and the estimated
  change is at least min_effect in that direction;
- unchanged: the whole interval lies within +-min_effect;
- inconclusive: anything else (too few samples, an interval wider than the effect that matters).
"""

from __future__ import annotations

import enum
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats
from tewatch.detect.config import CompareConfig
from tewatch.detect.direction import Direction, direction_of
from tewatch.detect.fdr import benjamini_hochberg


MAD_EFFICIENCY = 0.37


class NoiseSource(str, enum.Enum):
    """Where a comparison's run-to-run noise came from."""

    history = "history"  # the series' own history on the base branch
    samples = "samples"  # the spread of either run's samples
    benchmark = "benchmark"  # the spread of the level changes of the benchmark's cases in the comparison
    floor = "floor"  # the configured floor


class CompareVerdict(str, enum.Enum):
    regression = "regression"
    improvement = "improvement"
    unchanged = "unchanged"
    inconclusive = "inconclusive"


@dataclass(frozen=True)
class Comparison:
    """head / base - 1 as `effect`, with its interval; p before and q after FDR control."""

    verdict: CompareVerdict
    baseline: float
    head: float
    effect: float
    ci_low: float
    ci_high: float
    p_value: float
    q_value: float
    n_base: int
    n_head: int
    between_run_sigma: float
    min_effect: float
    noise_source: NoiseSource


@dataclass(frozen=True)
class _FamilyNoise:
    sigma: float  # log units, one run
    degrees_of_freedom: float  # of the estimate, for Student's t in place of the normal


@dataclass(frozen=True)
class _Shift:
    estimate: float  # log units
    half_width: float
    p_value: float


def _clean(samples: ArrayLike) -> np.ndarray:
    values = np.asarray(samples, dtype=float).ravel()
    return values[np.isfinite(values) & (values > 0)]


def hodges_lehmann_shift(base: np.ndarray, head: np.ndarray, confidence: float) -> tuple[float, float, float]:
    """Median of pairwise log differences and its Mann-Whitney interval (normal approximation)."""
    diffs = np.sort((np.log(head)[:, None] - np.log(base)[None, :]).ravel())
    n, m = len(head), len(base)
    z = stats.norm.ppf(0.5 + confidence / 2)
    k = int(np.floor(n * m / 2 - z * np.sqrt(n * m * (n + m + 1) / 12)))
    k = min(max(k, 0), len(diffs) - 1)
    return float(np.median(diffs)), float(diffs[k]), float(diffs[len(diffs) - 1 - k])


def within_run_sigma(samples: np.ndarray) -> float:
    """Robust spread of one run's samples in log units (scaled median absolute deviation)."""
    return float(stats.median_abs_deviation(np.log(samples), scale="normal"))


def assumed_between_run_sigma(base: np.ndarray, head: np.ndarray, floor: float) -> float:
    return max(floor, within_run_sigma(base), within_run_sigma(head))


def family_between_run_sigmas(
    cleaned: Sequence[tuple[np.ndarray, np.ndarray]], families: Sequence[str | None], config: CompareConfig
) -> dict[str, _FamilyNoise]:
    """Run-to-run noise of each family with enough compared cases, from the robust spread of their level
    changes (log ratio of the medians, which differ by two runs' noise). A median absolute deviation of k
    values is worth about 0.37 (k - 1) degrees of freedom of a standard deviation (its efficiency)."""
    changes: dict[str, list[float]] = defaultdict(list)
    for (base, head), family in zip(cleaned, families):
        if family is not None and min(len(base), len(head)) >= config.min_samples:
            changes[family].append(float(np.log(np.median(head) / np.median(base))))
    sigmas = {}
    for family, values in changes.items():
        if len(values) >= config.min_family_cases:
            spread = float(stats.median_abs_deviation(values, scale="normal"))
            sigmas[family] = _FamilyNoise(spread / np.sqrt(2.0), MAD_EFFICIENCY * (len(values) - 1))
    return sigmas


def measure_shift(
    base: np.ndarray, head: np.ndarray, between_sigma: float, confidence: float,
    degrees_of_freedom: float = np.inf,
) -> _Shift:
    """`degrees_of_freedom`: of `between_sigma` where it is an estimate (Student's t), else infinite."""
    estimate, low, high = hodges_lehmann_shift(base, head, confidence)
    z = stats.norm.ppf(0.5 + confidence / 2)
    sample_se = max(high - low, 0.0) / (2 * z)
    # one run each side: the level difference of two processes has variance 2 * sigma^2
    se = float(np.hypot(sample_se, np.sqrt(2.0) * between_sigma))
    level = stats.t(degrees_of_freedom) if np.isfinite(degrees_of_freedom) else stats.norm
    p_rank = float(stats.mannwhitneyu(head, base, alternative="two-sided").pvalue)
    p_level = float(2 * level.sf(abs(estimate) / se)) if se > 0 else 0.0
    return _Shift(estimate=estimate, half_width=float(level.ppf(0.5 + confidence / 2)) * se,
                  p_value=max(p_rank, p_level))


def _verdict(effect_log: float, half_width: float, q: float, config: CompareConfig) -> CompareVerdict:
    min_shift = np.log1p(config.min_effect)
    if q <= config.alpha and abs(effect_log) >= min_shift:
        return CompareVerdict.regression if effect_log > 0 else CompareVerdict.improvement
    if abs(effect_log) + half_width < min_shift:
        return CompareVerdict.unchanged
    return CompareVerdict.inconclusive


def compare_sweep(
    pairs: list[tuple[ArrayLike, ArrayLike, bool, float | None]], config: CompareConfig | None = None,
    families: Sequence[str] | None = None,
) -> list[Comparison]:
    """Compare every (base samples, head samples, higher_is_better, between-run sigma or None) pair and
    control the false discovery rate across all of them. `families` (e.g. each pair's benchmark) group
    the pairs whose level changes tell the run-to-run noise of those without history."""
    config = config or CompareConfig()
    cleaned = [(_clean(base_raw), _clean(head_raw)) for base_raw, head_raw, _, _ in pairs]
    families = list(families) if families is not None else [None] * len(pairs)
    family_sigmas = family_between_run_sigmas(cleaned, families, config)
    shifts: list[_Shift | None] = []
    betweens: list[tuple[float, NoiseSource]] = []
    for (base, head), (_, _, _, sigma), family in zip(cleaned, pairs, families):
        if min(len(base), len(head)) < config.min_samples:
            shifts.append(None)
            betweens.append((config.between_run_sigma, NoiseSource.floor) if sigma is None
                            else (sigma, NoiseSource.history))
            continue
        degrees_of_freedom = np.inf
        if sigma is None:
            between = assumed_between_run_sigma(base, head, config.between_run_sigma)
            source = NoiseSource.samples if between > config.between_run_sigma else NoiseSource.floor
            family_noise = family_sigmas.get(family)
            if family_noise is not None and family_noise.sigma > between:
                between, degrees_of_freedom = family_noise.sigma, family_noise.degrees_of_freedom
                source = NoiseSource.benchmark
        else:
            between, source = max(sigma, 0.0), NoiseSource.history
        betweens.append((between, source))
        shifts.append(measure_shift(base, head, between, config.confidence, degrees_of_freedom))
    tested = [s.p_value for s in shifts if s is not None]
    q_values = iter(benjamini_hochberg(tested)) if tested else iter(())
    results = []
    for (base, head), shift, (between, source), (_, _, higher_better, _) in zip(cleaned, shifts, betweens, pairs):
        baseline = float(np.median(base)) if len(base) else float("nan")
        head_level = float(np.median(head)) if len(head) else float("nan")
        if shift is None:
            results.append(
                Comparison(
                    CompareVerdict.inconclusive, baseline, head_level, float("nan"), float("nan"),
                    float("nan"), float("nan"), float("nan"), len(base), len(head), between,
                    config.min_effect, source,
                )
            )
            continue
        q = float(next(q_values))
        # a verdict is about "worse or better", so flip the sign where higher is better
        worse_log = -shift.estimate if higher_better else shift.estimate
        verdict = _verdict(worse_log, shift.half_width, q, config)
        results.append(
            Comparison(
                verdict=verdict,
                baseline=baseline,
                head=head_level,
                effect=float(np.expm1(shift.estimate)),
                ci_low=float(np.expm1(shift.estimate - shift.half_width)),
                ci_high=float(np.expm1(shift.estimate + shift.half_width)),
                p_value=shift.p_value,
                q_value=q,
                n_base=len(base),
                n_head=len(head),
                between_run_sigma=between,
                min_effect=config.min_effect,
                noise_source=source,
            )
        )
    return results


def change_direction(comparison: Comparison, higher_is_better: bool) -> Direction:
    return direction_of(comparison.effect, higher_is_better)

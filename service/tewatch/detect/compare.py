"""A pull request's samples against its merge base's, series by series, with FDR control across the sweep.

docs/MATH.md writes the method down. In short: within one process samples are tight, between processes
the level moves, so a comparison needs the run-to-run (between-process) noise, and there are two ways to
it.

- A/B rounds (both sides measured K times in interleaved rounds, a fresh process per case each round):
  each round gives one level per side (the median of its samples). Paired by round, the K log ratios
  d_r = log(head_r / base_r) are the observations; their spread is the between-process noise itself. It is
  moderated by the spread of the other series of the same benchmark (the variance of each series about its
  own mean, so a change of the whole benchmark does not inflate it; limma's moderated t), and the interval
  is Student's t on the pooled degrees of freedom.
- One run per side: the Hodges-Lehmann shift of the log samples with its rank interval, widened by the
  run-to-run noise from the series' history on the base branch; without history, by the largest of a
  floor, either run's own sample spread, a host-bound floor for calls of tens of microseconds, and the
  spread of the level changes of the benchmark's other cases in this comparison. That spread is the
  smaller of two robust estimates (about the benchmark's median change, and about no change), so neither
  a change of the whole benchmark nor one of fewer than half of its cases is taken for noise.

Verdicts: `unstable` when either side's samples within one process are multi-modal (the modes are kept);
`regression` / `improvement` when significant after Benjamini-Hochberg and the estimate is at least
min_effect; `unchanged` when the whole interval lies within +-min_effect; `inconclusive` otherwise.
"""

from __future__ import annotations

import enum
import itertools
from collections import defaultdict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
from numpy.typing import ArrayLike

from tewatch.detect.config import CompareConfig
from tewatch.detect.direction import Direction, direction_of
from tewatch.detect.distributions import (
    MAD_PER_SIGMA,
    f_quantile,
    mad_sigma,
    normal_quantile,
    t_quantile,
    t_two_sided_p,
)
from tewatch.detect.fdr import benjamini_hochberg
from tewatch.detect.modes import sample_modes
from tewatch.detect.rank_test import mann_whitney_p

MAD_EFFICIENCY = 0.37


class NoiseSource(str, enum.Enum):
    """Where a comparison's run-to-run noise came from."""

    rounds = "rounds"  # the spread of the A/B rounds (moderated by the benchmark's other series)
    history = "history"  # the series' own history on the base branch
    samples = "samples"  # the spread of either run's samples
    benchmark = "benchmark"  # the spread of the level changes of the benchmark's cases in the comparison
    host = "host"  # the floor of host-bound calls without history
    floor = "floor"  # the configured floor


class CompareVerdict(str, enum.Enum):
    regression = "regression"
    improvement = "improvement"
    unchanged = "unchanged"
    inconclusive = "inconclusive"
    unstable = "unstable"


@dataclass(frozen=True)
class Side:
    """One side's samples of a series; `round_sizes` splits them into A/B rounds (None: one run)."""

    samples: ArrayLike
    round_sizes: Sequence[int] | None = None


@dataclass(frozen=True)
class ComparePair:
    base: Side
    head: Side
    higher_is_better: bool = False
    history_sigma: float | None = None  # run-to-run noise (log units) from the base branch's history
    family: str | None = None  # the benchmark: series whose noise informs each other's
    # within the family, the series whose process-level noise is alike (the backend: TE's fused kernels
    # and its pure-PyTorch reference moved by 0.3 % and 3-6 % between processes); a group of one series
    # borrows its family's
    group: str | None = None
    paired: bool = False  # both sides come from one A/B session: rounds pair by index
    seconds: bool = True  # the value is a time (host-bound floor applies to short ones)
    # whether the call is host-bound (its kernels a small share of its time); None: unknown, then a call
    # shorter than host_bound_seconds is taken as host-bound
    host_bound: bool | None = None


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
    rounds: int | None = None
    modes: list[float] = field(default_factory=list)


@dataclass(frozen=True)
class _Shift:
    estimate: float  # log units
    half_width: float
    p_value: float
    sigma: float
    source: NoiseSource
    rounds: int | None = None


def _clean(samples: ArrayLike) -> np.ndarray:
    values = np.asarray(samples, dtype=float).ravel()
    return values[np.isfinite(values) & (values > 0)]


def _rounds(side: Side) -> list[np.ndarray]:
    """The positive finite samples of each round (empty rounds kept, as empty arrays)."""
    raw = np.asarray(side.samples, dtype=float).ravel()
    sizes = list(side.round_sizes or [])
    if sum(sizes) != len(raw):
        return []
    edges = np.cumsum([0, *sizes])
    return [_clean(raw[a:b]) for a, b in itertools.pairwise(edges)]


def hodges_lehmann_shift(base: np.ndarray, head: np.ndarray, confidence: float) -> tuple[float, float, float]:
    """Median of pairwise log differences and its Mann-Whitney interval (normal approximation)."""
    diffs = np.sort((np.log(head)[:, None] - np.log(base)[None, :]).ravel())
    n, m = len(head), len(base)
    z = normal_quantile(0.5 + confidence / 2)
    k = int(np.floor(n * m / 2 - z * np.sqrt(n * m * (n + m + 1) / 12)))
    k = min(max(k, 0), len(diffs) - 1)
    return float(np.median(diffs)), float(diffs[k]), float(diffs[len(diffs) - 1 - k])


def within_run_sigma(samples: np.ndarray) -> float:
    """Robust spread of one run's samples in log units (scaled median absolute deviation)."""
    return mad_sigma(np.log(samples))


# A/B rounds ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _RoundDifferences:
    """What the rounds of one pair say before moderation."""

    estimate: float  # log units
    variance: float  # of one round's difference
    dof: float
    rounds: int
    paired: bool
    differences: tuple[float, ...] = ()  # paired: each round's log ratio


def round_differences(pair: ComparePair, min_samples: int) -> _RoundDifferences | None:
    """Per-round levels (median of each round's samples, in logs) of both sides: paired differences when
    the rounds share a session, else each side's mean level and spread. None without two rounds a side."""
    if pair.base.round_sizes is None or pair.head.round_sizes is None:
        return None
    base, head = _rounds(pair.base), _rounds(pair.head)
    # a metric of one value a process (compile time, CPU time per call) has one value a round: its level
    one_value_rounds = all(n <= 1 for n in (*pair.base.round_sizes, *pair.head.round_sizes))
    enough = 1 if one_value_rounds else max(1, min_samples // 2)
    base_levels = [np.log(np.median(r)) if len(r) >= enough else np.nan for r in base]
    head_levels = [np.log(np.median(r)) if len(r) >= enough else np.nan for r in head]
    if pair.paired and len(base_levels) == len(head_levels):
        d = np.array(
            [
                h - b
                for b, h in zip(base_levels, head_levels, strict=True)
                if np.isfinite(b) and np.isfinite(h)
            ]
        )
        if len(d) < 2:
            return None
        return _RoundDifferences(
            float(d.mean()),
            float(d.var(ddof=1)),
            len(d) - 1.0,
            len(d),
            True,
            differences=tuple(float(x) for x in d),
        )
    b = np.array([x for x in base_levels if np.isfinite(x)])
    h = np.array([x for x in head_levels if np.isfinite(x)])
    if len(b) < 2 or len(h) < 2:
        return None
    vb, vh = float(b.var(ddof=1)), float(h.var(ddof=1))
    pooled = ((len(b) - 1) * vb + (len(h) - 1) * vh) / (len(b) + len(h) - 2)
    return _RoundDifferences(
        float(h.mean() - b.mean()), 2 * pooled, len(b) + len(h) - 2.0, min(len(b), len(h)), False
    )


def _family_round_prior(
    found: Sequence[_RoundDifferences | None], families: Sequence[Hashable | None], config: CompareConfig
) -> dict[Hashable, tuple[float, float]]:
    """Family -> (prior variance of one round's difference, its degrees of freedom): the family's pooled
    variance, each series about its own mean (a change of the whole family does not enter it), each
    capped at `prior_cap` times the family's median so that one wild process cannot set the family's
    noise. Process levels are heavy-tailed (a process now and then sits 5-12 % off): the mean keeps that
    tail in, where a median would promise tighter rounds than a pull request gets. Degrees of freedom are
    the family's, capped."""
    pooled: dict[Hashable, list[tuple[float, float]]] = defaultdict(list)
    for rounds, family in zip(found, families, strict=True):
        if rounds is not None and family is not None:
            pooled[family].append((rounds.variance, rounds.dof))
    priors = {}
    for family, items in pooled.items():
        if len(items) >= 2:
            cap = config.prior_cap * float(np.median([v for v, _ in items]))
            dof = sum(d for _, d in items)
            variance = sum(min(v, cap) * d for v, d in items) / dof
            priors[family] = (variance, min(dof, config.max_prior_dof))
    return priors


def _round_priors(
    items: Sequence[ComparePair], rounds: Sequence[_RoundDifferences | None], config: CompareConfig
) -> list[tuple[float, float] | None]:
    """Each pair's prior for its round variance: its group's within the family, else its family's."""
    groups = [(p.family, p.group) if p.family is not None and p.group is not None else None for p in items]
    by_group = _family_round_prior(rounds, groups, config)
    by_family = _family_round_prior(rounds, [p.family for p in items], config)
    return [
        by_group[g] if g in by_group else by_family.get(p.family) if p.family is not None else None
        for p, g in zip(items, groups, strict=True)
    ]


def without_outlier_rounds(
    rounds: _RoundDifferences, prior_variance: float, config: CompareConfig
) -> _RoundDifferences:
    """Paired rounds less those whose difference lies further than outlier_k prior sigmas from the
    median round (an outlying process, not the change), keeping at least two rounds."""
    differences = np.array(rounds.differences)
    if len(differences) < 3 or prior_variance <= 0:
        return rounds
    distance = np.abs(differences - np.median(differences))
    keep = distance <= config.round_outlier_k * np.sqrt(prior_variance)
    if keep.all() or keep.sum() < 2:
        return rounds
    kept = differences[keep]
    return _RoundDifferences(
        float(kept.mean()),
        float(kept.var(ddof=1)),
        len(kept) - 1.0,
        len(kept),
        True,
        differences=tuple(float(x) for x in kept),
    )


def rounds_shift(
    rounds: _RoundDifferences, prior: tuple[float, float] | None, config: CompareConfig
) -> _Shift:
    """Moderated t on the round differences: the series' own variance and its family's, weighted by their
    degrees of freedom, never below the floor. A series whose own rounds disagree beyond what its family's
    variance allows (an F test at `own_spread_alpha`) keeps its own variance and degrees of freedom: its
    process level moves more than its family's, and borrowing their noise would promise it a precision
    its rounds do not have (on an H200, one te.Linear's kernel time sat 14 % apart in two processes of the
    same code, where its family moves by 1-2 %)."""
    variance, dof = rounds.variance, rounds.dof
    if prior is not None:
        prior_variance, prior_dof = prior
        if not _beyond_prior(rounds, prior, config):
            variance = (dof * variance + prior_dof * prior_variance) / (dof + prior_dof)
        dof = dof + prior_dof
    floor = 2 * config.rounds_sigma_floor**2
    variance = max(variance, floor)
    se = float(np.sqrt(variance / rounds.rounds))
    p = t_two_sided_p(rounds.estimate / se, dof)
    return _Shift(
        rounds.estimate,
        t_quantile(0.5 + config.confidence / 2, dof) * se,
        p,
        float(np.sqrt(variance / 2)),
        NoiseSource.rounds,
        rounds.rounds,
    )


def _beyond_prior(rounds: _RoundDifferences, prior: tuple[float, float], config: CompareConfig) -> bool:
    prior_variance, prior_dof = prior
    if prior_variance <= 0:
        return rounds.variance > 0
    ratio = rounds.variance / prior_variance
    return bool(ratio > f_quantile(1 - config.own_spread_alpha, rounds.dof, prior_dof))


# one run per side ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _FamilyNoise:
    sigma: float  # log units, one run
    degrees_of_freedom: float  # of the estimate, for Student's t in place of the normal


def family_between_run_sigmas(
    cleaned: Sequence[tuple[np.ndarray, np.ndarray]], families: Sequence[str | None], config: CompareConfig
) -> dict[str, _FamilyNoise]:
    """Run-to-run noise of each family with enough compared cases, from their level changes (log ratio of
    the medians, which differ by two runs' noise): the smaller of the scaled median absolute deviation
    about the family's median change (blind to a change of every case) and about zero (blind to a change
    of fewer than half of them). A median absolute deviation of k values is worth about 0.37 (k - 1)
    degrees of freedom of a standard deviation (its efficiency)."""
    changes: dict[str, list[float]] = defaultdict(list)
    for (base, head), family in zip(cleaned, families, strict=True):
        if family is not None and min(len(base), len(head)) >= config.min_samples:
            changes[family].append(float(np.log(np.median(head) / np.median(base))))
    sigmas = {}
    for family, values in changes.items():
        if len(values) >= config.min_family_cases:
            about_median = mad_sigma(values)
            about_zero = float(np.median(np.abs(values))) / MAD_PER_SIGMA
            spread = min(about_median, about_zero) / np.sqrt(2.0)
            # Student's t on at least min_family_dof: five cases alone give a median absolute deviation
            # of 1.5 degrees of freedom, and t on 1.5 widens an interval sevenfold
            dof = max(MAD_EFFICIENCY * (len(values) - 1), config.min_family_dof)
            sigmas[family] = _FamilyNoise(spread, dof)
    return sigmas


def single_run_noise(
    base: np.ndarray, head: np.ndarray, pair: ComparePair, family: _FamilyNoise | None, config: CompareConfig
) -> tuple[float, float, NoiseSource]:
    """(sigma of one run's level, degrees of freedom, source) for a pair of single runs."""
    if pair.history_sigma is not None:
        return max(pair.history_sigma, 0.0), np.inf, NoiseSource.history
    between, source = config.between_run_sigma, NoiseSource.floor
    spread = max(within_run_sigma(base), within_run_sigma(head))
    if spread > between:
        between, source = spread, NoiseSource.samples
    short = float(np.median(base)) < config.host_bound_seconds
    host_bound = pair.host_bound if pair.host_bound is not None else short
    if pair.seconds and host_bound and config.host_bound_sigma > between:
        between, source = config.host_bound_sigma, NoiseSource.host
    if family is not None and family.sigma > between:
        return family.sigma, family.degrees_of_freedom, NoiseSource.benchmark
    return between, np.inf, source


def _one_shot_in_rounds(pair: ComparePair) -> bool:
    """Both sides of one A/B session, the series measured in round 1 alone: a check whose timing is a
    by-product (the contract suite's host work: shape checks, CPU copies, torch.save), one process a side.
    No level can be read from one process a side: a CPU round trip of the same code moved by 21 % between
    two such processes on an H200, a CPU op sweep by 0.1x and 8x. Its comparison is inconclusive."""
    sizes = (pair.base.round_sizes, pair.head.round_sizes)
    return pair.paired and all(s is not None and len(s) > 1 and sum(1 for n in s if n) == 1 for s in sizes)


def measure_shift(
    base: np.ndarray,
    head: np.ndarray,
    between_sigma: float,
    confidence: float,
    degrees_of_freedom: float = np.inf,
    source: NoiseSource = NoiseSource.floor,
) -> _Shift:
    """`degrees_of_freedom`: of `between_sigma` where it is an estimate (Student's t), else infinite."""
    estimate, low, high = hodges_lehmann_shift(base, head, confidence)
    z = normal_quantile(0.5 + confidence / 2)
    sample_se = max(high - low, 0.0) / (2 * z)
    # one run each side: the level difference of two processes has variance 2 * sigma^2
    se = float(np.hypot(sample_se, np.sqrt(2.0) * between_sigma))
    p_rank = mann_whitney_p(head, base)
    p_level = t_two_sided_p(estimate / se, degrees_of_freedom) if se > 0 else 0.0
    return _Shift(
        estimate=estimate,
        half_width=t_quantile(0.5 + confidence / 2, degrees_of_freedom) * se,
        p_value=max(p_rank, p_level),
        sigma=between_sigma,
        source=source,
    )


# the sweep -------------------------------------------------------------------------------------------------
def _verdict(effect_log: float, half_width: float, q: float, config: CompareConfig) -> CompareVerdict:
    min_shift = np.log1p(config.min_effect)
    if q <= config.alpha and abs(effect_log) >= min_shift:
        return CompareVerdict.regression if effect_log > 0 else CompareVerdict.improvement
    if abs(effect_log) + half_width < min_shift:
        return CompareVerdict.unchanged
    return CompareVerdict.inconclusive


def _as_pair(item: ComparePair | tuple, family: str | None) -> ComparePair:
    if isinstance(item, ComparePair):
        return item if family is None or item.family is not None else replace(item, family=family)
    base, head, higher_is_better, sigma = item
    return ComparePair(Side(base), Side(head), higher_is_better, sigma, family)


def _modes(side: Side, config: CompareConfig) -> list[float]:
    """Modes of a side whose processes (each round is one) mostly have them: those of the first."""
    groups = _rounds(side) if side.round_sizes is not None else [_clean(side.samples)]
    found = [m for m in (sample_modes(g, config.mode_min_share, config.mode_separation) for g in groups) if m]
    return found[0] if found and 2 * len(found) >= len(groups) else []


def _beyond_modes(
    base: np.ndarray, head: np.ndarray, base_modes: list[float], head_modes: list[float], min_effect: float
) -> bool:
    """Whether the head left every level the base had (or the base every level of the head's): a change
    past all modes is a change, whatever the modes."""
    base_levels = base_modes or [float(np.median(base))]
    head_levels = head_modes or [float(np.median(head))]
    factor = 1 + min_effect
    return min(head_levels) > max(base_levels) * factor or max(head_levels) * factor < min(base_levels)


def compare_sweep(
    pairs: Sequence[ComparePair | tuple],
    config: CompareConfig | None = None,
    families: Sequence[str | None] | None = None,
) -> list[Comparison]:
    """Compare every pair (a ComparePair, or a tuple of base samples, head samples, higher_is_better and
    the history's between-run sigma or None) and control the false discovery rate across all of them.
    `families` (each pair's benchmark) group the pairs whose noise informs each other's."""
    config = config or CompareConfig()
    families = list(families) if families is not None else [None] * len(pairs)
    items = [_as_pair(item, family) for item, family in zip(pairs, families, strict=False)]
    families = [item.family for item in items]
    cleaned = [(_clean(p.base.samples), _clean(p.head.samples)) for p in items]
    rounds = [round_differences(p, config.min_samples) for p in items]
    priors = _round_priors(items, rounds, config)
    rounds = [
        r if r is None or not r.paired or prior is None else without_outlier_rounds(r, prior[0], config)
        for r, prior in zip(rounds, priors, strict=True)
    ]
    family_sigmas = family_between_run_sigmas(
        [c for c, r in zip(cleaned, rounds, strict=True) if r is None],
        [f for f, r in zip(families, rounds, strict=True) if r is None],
        config,
    )
    shifts: list[_Shift | None] = []
    for pair, (base, head), found, prior in zip(items, cleaned, rounds, priors, strict=True):
        if found is not None:
            shifts.append(rounds_shift(found, prior, config))
        elif min(len(base), len(head)) < config.min_samples or _one_shot_in_rounds(pair):
            shifts.append(None)
        else:
            family = family_sigmas.get(pair.family) if pair.family else None
            sigma, dof, source = single_run_noise(base, head, pair, family, config)
            shifts.append(measure_shift(base, head, sigma, config.confidence, dof, source))
    tested = [s.p_value for s in shifts if s is not None]
    q_values = iter(benjamini_hochberg(tested)) if tested else iter(())
    results = []
    for pair, (base, head), shift in zip(items, cleaned, shifts, strict=True):
        baseline = float(np.median(base)) if len(base) else float("nan")
        head_level = float(np.median(head)) if len(head) else float("nan")
        if shift is None:
            source = NoiseSource.history if pair.history_sigma is not None else NoiseSource.floor
            sigma = pair.history_sigma if pair.history_sigma is not None else config.between_run_sigma
            nan = float("nan")  # effect, its interval, p and q
            results.append(
                Comparison(
                    CompareVerdict.inconclusive,
                    baseline,
                    head_level,
                    nan,
                    nan,
                    nan,
                    nan,
                    nan,
                    len(base),
                    len(head),
                    sigma,
                    config.min_effect,
                    source,
                )
            )
            continue
        q = float(next(q_values))
        base_modes, head_modes = _modes(pair.base, config), _modes(pair.head, config)
        modes = base_modes or head_modes
        # a verdict is about "worse or better", so flip the sign where higher is better
        worse_log = -shift.estimate if pair.higher_is_better else shift.estimate
        verdict = _verdict(worse_log, shift.half_width, q, config)
        if modes and not (
            verdict in (CompareVerdict.regression, CompareVerdict.improvement)
            and _beyond_modes(base, head, base_modes, head_modes, config.min_effect)
        ):
            verdict = CompareVerdict.unstable
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
                between_run_sigma=shift.sigma,
                min_effect=config.min_effect,
                noise_source=shift.source,
                rounds=shift.rounds,
                modes=modes,
            )
        )
    return results


def kernel_against_event(kernel: Comparison, event: Comparison) -> Comparison:
    """A call's kernel time beside its event time: the event time spans the kernels, so kernel time that
    moved while the event time is `unchanged`, or moved the other way from a changed event time, is noise
    of the kernel measurement (on an H200 a GEMM's kernel time moved by up to 15 % between processes whose
    event times agreed within 0.8 %; a GEMM 3.8 % slower in event time read 8 % faster in kernel time):
    inconclusive. Event time that moved while kernel time did not is the host's share, and stays."""
    moved = (CompareVerdict.regression, CompareVerdict.improvement)
    if kernel.verdict in moved and (
        event.verdict is CompareVerdict.unchanged
        or (event.verdict in moved and event.verdict is not kernel.verdict)
    ):
        return replace(kernel, verdict=CompareVerdict.inconclusive)
    return kernel


def change_direction(comparison: Comparison, higher_is_better: bool) -> Direction:
    return direction_of(comparison.effect, higher_is_better)

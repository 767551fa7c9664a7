"""Tunable knobs of the detectors. One frozen object so that a verdict can record exactly what it used."""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class ChangePointConfig:
    """Change points on a branch's history of one series.

    min_effect: smallest relative level change worth reporting (0.02 = 2 %), judged on the
        Hodges-Lehmann shift between the neighbouring segments.
    window: points on each side used to screen for candidate change points.
    z_screen: screening threshold on the windowed statistic (loose, Hunter's "weak" pass).
    false_alarm_rate: chance that a segment of pure noise yields a change point; sets the critical
        value of the rank test on the full segments between neighbouring change points, from the
        segment's length (the largest statistic over all its splits is what the test judges).
    persistence: a new level must hold for this many points (also the minimum segment length), so a
        spike or a short burst of throttled runs is never a change point, and the newest point alone
        never raises one.
    winsor_k: for screening, points further than k robust sigmas from the local median (5 points) are
        clipped there.
    outlier_k: points further than k robust sigmas from the median of their segment (a first pass)
        are set aside: outlying processes, not levels.
    max_segment: points of each neighbouring segment used to confirm a change (bounds the memory of
        old levels).
    sigma_floor: lower bound on the per-point noise in log units (guards constant series).
    speed_share, speed_gap, speed_separation: segments whose runs land at one of two speeds (detect.speeds:
        each speed holds at least speed_share of the points, a gap between them of speed_gap and
        medians speed_separation times the speeds' robust spread apart) also test the share of slow runs.
    """

    min_effect: float = 0.02
    window: int = 60
    z_screen: float = 2.0
    false_alarm_rate: float = 0.01
    persistence: int = 5
    winsor_k: float = 3.0
    outlier_k: float = 3.0
    max_segment: int = 250
    sigma_floor: float = 0.001
    speed_share: float = 0.1
    speed_gap: float = 2.0
    speed_separation: float = 8.0

    def as_dict(self) -> dict[str, float | int]:
        return asdict(self)


@dataclass(frozen=True)
class CompareConfig:
    """Pull request head against merge base, on the samples of one case.

    min_effect: smallest relative change that counts as a regression or improvement.
    alpha: false discovery rate across the sweep (Benjamini-Hochberg).
    confidence: two-sided confidence of the reported interval of the change.
    min_samples: fewer samples on either side is "inconclusive".
    between_run_sigma: floor of the run-to-run noise (log units) assumed when a series has no history
        to measure it from; the assumption is raised to either run's own sample spread, and to the
        spread of the level changes of its benchmark's other cases, where larger.
    min_family_cases: compared cases a benchmark needs before the spread of their level changes counts.
    min_family_dof: the fewest degrees of freedom Student's t is given for that spread.
    host_bound_seconds, host_bound_sigma: single runs without history of calls shorter than this take
        at least this run-to-run noise (host-bound calls moved by 20-80 % between two hosts).
    rounds_sigma_floor: floor of the between-process noise (log units) read from A/B rounds.
    max_prior_dof: cap on the degrees of freedom a benchmark's other series lend a series' round spread.
    prior_cap: a series' round variance counts towards its benchmark's at most this many times the
        benchmark's median.
    own_spread_alpha: a series whose round variance exceeds its benchmark's by more than the F test at
        this level allows keeps its own variance (and degrees of freedom) instead of borrowing theirs.
    round_outlier_k: a paired round further than this many of the benchmark's sigmas from the series'
        median round is an outlying process and is left out (three rounds or more, two always kept).
    mode_min_share, mode_separation: a process's samples are multi-modal when a gap splits off at least
        this share of them and is this many times the parts' robust spread (detect.modes).
    bootstrap_resamples: resamples for intervals of ratios (compiled/eager, nvfp4/bf16).
    """

    min_effect: float = 0.03
    alpha: float = 0.05
    confidence: float = 0.95
    min_samples: int = 5
    between_run_sigma: float = 0.02
    min_family_cases: int = 5
    min_family_dof: float = 4.0
    host_bound_seconds: float = 1e-4
    host_bound_sigma: float = 0.5
    rounds_sigma_floor: float = 0.003
    max_prior_dof: float = 30.0
    prior_cap: float = 10.0
    round_outlier_k: float = 4.0
    own_spread_alpha: float = 0.01
    mode_min_share: float = 0.1
    mode_separation: float = 4.0
    bootstrap_resamples: int = 2000

    def as_dict(self) -> dict[str, float | int]:
        return asdict(self)

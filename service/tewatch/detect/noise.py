"""Run-to-run timing noise of an H200, as measured (shared research note h200-te-probe.md, 2026-11-29).

One commit's value is what one asv process reports: the median of its samples. Its noise therefore has
two layers, and the second dominates:

- within a process: the spread of event-timed samples (CV 2.4 % quantize, 3.5 % bf16 matmul, 7.9 %
  te.Linear fwd+bwd); the matmul also steps up about 7 % a few repetitions in (clock/power state);
- across processes: each fresh process sits at its own level (CV of process medians 8.5 % quantize,
  2.2 % matmul, 7.6 % te.Linear). The quantize levels were 0.150, 0.159 and 0.19 ms: mostly close,
  sometimes a quarter higher. That is a tight core plus an occasional high level, modelled here as a
  log-normal core with a probability of an outlying process.

Each profile below reproduces its measured across-process CV (checked in tests/detect/test_noise_and_evaluation.py).
Real samples from tests/fixtures/h200-full/ can replace the within-process layer (`from_samples`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tewatch.detect.distributions import mad_sigma


@dataclass(frozen=True)
class NoiseProfile:
    name: str
    level_sigma: float  # log-normal core of the process level
    outlier_probability: float  # chance that a process sits at an outlying level
    outlier_low: float  # outlying level: +low .. +high (relative), always slower
    outlier_high: float
    within_cv: float  # spread of samples inside one process
    clock_step: float = 0.0  # relative step of samples after `clock_step_after` of them
    clock_step_after: float = 0.3
    measured_across_cv: float = 0.0  # the probe's figure this profile reproduces

    def process_levels(self, rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
        level = np.exp(rng.normal(0.0, self.level_sigma, shape))
        outlying = rng.random(shape) < self.outlier_probability
        bump = rng.uniform(self.outlier_low, self.outlier_high, shape)
        return level * np.where(outlying, 1.0 + bump, 1.0)

    def samples(self, rng: np.random.Generator, level: float, count: int) -> np.ndarray:
        """`count` event-timed samples of one process sitting at `level`."""
        values = level * np.exp(rng.normal(0.0, self.within_cv, count))
        if self.clock_step:
            values[int(count * self.clock_step_after) :] *= 1.0 + self.clock_step
        return values

    def commit_values(self, rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
        """Multiplicative noise of per-commit medians: process level times the median's own spread.

        The median of ~100 samples has a spread of about 1.25 * within_cv / 10, folded in directly so
        that large replays need no per-sample draws.
        """
        median_spread = 1.2533 * self.within_cv / 10.0
        return self.process_levels(rng, shape) * np.exp(rng.normal(0.0, median_spread, shape))


H200_PROFILES: dict[str, NoiseProfile] = {
    "matmul": NoiseProfile(
        name="matmul",
        level_sigma=0.021,
        outlier_probability=0.0,
        outlier_low=0.0,
        outlier_high=0.0,
        within_cv=0.035,
        clock_step=0.07,
        measured_across_cv=0.022,
    ),
    "quantize": NoiseProfile(
        name="quantize",
        level_sigma=0.03,
        outlier_probability=0.15,
        outlier_low=0.15,
        outlier_high=0.28,
        within_cv=0.024,
        measured_across_cv=0.085,
    ),
    "linear": NoiseProfile(
        name="linear",
        level_sigma=0.06,
        outlier_probability=0.05,
        outlier_low=0.15,
        outlier_high=0.30,
        within_cv=0.079,
        measured_across_cv=0.076,
    ),
}


def from_samples(name: str, process_medians: np.ndarray, within_cv: float) -> NoiseProfile:
    """A profile fitted to real process medians: robust core spread, outliers beyond 3 robust sigmas."""
    logs = np.log(np.asarray(process_medians, dtype=float))
    centre = np.median(logs)
    core = mad_sigma(logs)
    outlying = logs - centre > 3 * core
    bumps = np.expm1(logs[outlying] - centre) if outlying.any() else np.array([0.0])
    return NoiseProfile(
        name=name,
        level_sigma=core,
        outlier_probability=float(outlying.mean()),
        outlier_low=float(bumps.min()),
        outlier_high=float(bumps.max()),
        within_cv=within_cv,
        measured_across_cv=float(np.std(np.exp(logs)) / np.mean(np.exp(logs))),
    )

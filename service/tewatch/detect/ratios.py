"""Paired ratios measured in one run (compiled/eager, nvfp4/bf16) as series of their own.

Two cases pair when their params are equal except for the pairing key, which holds the numerator's
value on one and the denominator's on the other. The ratio of their values in one run is one point; the
ratio's samples come from a bootstrap of the two sample sets (their samples are not paired).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class RatioSpec:
    key: str  # the param that differs
    denominator: str  # its value on the reference case
    numerators: tuple[str, ...] | None = None  # None: every other value

    def name(self, numerator: str) -> str:
        return f"{self.key}:{numerator}/{self.denominator}"


DEFAULT_RATIOS = (RatioSpec("mode", "eager"), RatioSpec("recipe", "bf16", ("nvfp4",)))


@dataclass(frozen=True)
class Measured:
    """One benchmark of one case in one run."""

    benchmark: str
    params: Mapping[str, object]
    value: float
    samples: tuple[float, ...] = ()


@dataclass(frozen=True)
class RatioPoint:
    key: str  # identifies the derived series: benchmark, ratio, the shared params
    benchmark: str
    ratio: str
    shared_params: Mapping[str, object]
    value: float
    samples: tuple[float, ...]


def ratio_series_key(benchmark: str, ratio: str, shared: Mapping[str, object]) -> str:
    return f"ratio:{benchmark}:{ratio}:{json.dumps(dict(shared), sort_keys=True, separators=(',', ':'))}"


def bootstrap_ratio_samples(
    numerator: Iterable[float], denominator: Iterable[float], resamples: int, seed: int = 0
) -> tuple[float, ...]:
    num, den = np.asarray(list(numerator), float), np.asarray(list(denominator), float)
    if len(num) == 0 or len(den) == 0 or resamples <= 0:
        return ()
    rng = np.random.default_rng(seed)
    num_medians = np.median(rng.choice(num, (resamples, len(num))), axis=1)
    den_medians = np.median(rng.choice(den, (resamples, len(den))), axis=1)
    return tuple((num_medians / den_medians).tolist())


def paired_ratios(
    measured: Iterable[Measured], specs: Iterable[RatioSpec] = DEFAULT_RATIOS, resamples: int = 200
) -> list[RatioPoint]:
    items = [m for m in measured if np.isfinite(m.value) and m.value > 0]
    points = []
    for spec in specs:
        denominators = {}
        for m in items:
            if m.params.get(spec.key) == spec.denominator:
                shared = {k: v for k, v in m.params.items() if k != spec.key}
                denominators[(m.benchmark, json.dumps(shared, sort_keys=True, default=str))] = m
        for m in items:
            value = m.params.get(spec.key)
            if value is None or value == spec.denominator:
                continue
            if spec.numerators is not None and value not in spec.numerators:
                continue
            shared = {k: v for k, v in m.params.items() if k != spec.key}
            reference = denominators.get((m.benchmark, json.dumps(shared, sort_keys=True, default=str)))
            if reference is None:
                continue
            ratio = spec.name(str(value))
            points.append(
                RatioPoint(
                    key=ratio_series_key(m.benchmark, ratio, shared),
                    benchmark=m.benchmark,
                    ratio=ratio,
                    shared_params=shared,
                    value=m.value / reference.value,
                    samples=bootstrap_ratio_samples(m.samples, reference.samples, resamples),
                )
            )
    return points

"""Metric families identical code does not reproduce, with the values an H200 A/A measured (the same code in
separate processes, TE 2.20.2; tewatch.detect.noise_families): inconclusive on a single pair, judged as
every other metric once runs of identical code taught their noise; the other families keep deciding on one
pair."""

from __future__ import annotations

import pytest

from tewatch.detect.drift import DriftVerdict, ErrorBand, ErrorMetric, error_drift, learn_error_band
from tewatch.detect.memory import MIB, BytesNoise, BytesVerdict, compare_bytes, learn_bytes_noise
from tewatch.detect.noise_families import OFFLOADED_VS_PLAIN, RESERVED_BYTES, noise_family

UNLEARNED = BytesNoise(0.0, 0.0, 0)
NO_BAND = ErrorBand(0.0, 0)

# offload.CpuOffloadTransformerLayer on the H200: metric -> (base, A/A arm), measured in separate processes
OFFLOAD_FP8_CURRENT = {
    "offloaded_dgrad_vs_plain_rel_l2": (0.00286, 0.121),
    "offloaded_wgrad_vs_plain_max_abs": (16.0, 343.0),
    "offloaded_dgrad_vs_plain_sqnr_db": (50.9, 18.4),
}
OFFLOAD_BF16 = {
    "offloaded_dgrad_vs_plain_max_abs": (1.25, 1.0),
    "offloaded_wgrad_vs_plain_max_abs": (20.0, 16.0),
}


def test_the_families_hold_reserved_bytes_and_offloaded_against_plain_errors_alone() -> None:
    assert noise_family("peak_reserved_bytes") is RESERVED_BYTES
    for metric in (*OFFLOAD_FP8_CURRENT, *OFFLOAD_BF16, "offloaded_wgrad_vs_plain_sqnr_db"):
        assert noise_family(metric) is OFFLOADED_VS_PLAIN
    for metric in (
        "peak_allocated_bytes",
        "setup_allocated_bytes",
        "steady_allocated_bytes",
        "output_vs_fp32_rel_l2",
        "offloaded_dgrad_vs_plain_rel_l2_extra",
        "reserved",
    ):
        assert noise_family(metric) is None


def test_reserved_bytes_of_an_a_a_are_inconclusive_until_their_noise_is_learned() -> None:
    # training.TrainSteps te fp8-current graphed: reserved 1802 MiB (base), 1930 MiB (A/A arm)
    base, aa = 1802 * MIB, 1930 * MIB
    change = compare_bytes(base, aa, UNLEARNED, RESERVED_BYTES)
    assert change.verdict is BytesVerdict.inconclusive
    assert change.reason == "no runs of identical code yet: reserved bytes follow the allocator"
    assert change.describe("peak_reserved_bytes") == (
        "peak_reserved_bytes 1802.0 MiB -> 1930.0 MiB, +128.0 MiB (+7.1 %)"
    )
    # the same pair without the family: today's single-pair rule calls it a regression
    assert compare_bytes(base, aa, UNLEARNED).verdict is BytesVerdict.regression
    # a step below a MiB and a percent is still no change at all
    assert compare_bytes(base, base + MIB // 2, UNLEARNED, RESERVED_BYTES).verdict is BytesVerdict.unchanged


def test_reserved_bytes_with_learned_noise_are_judged_as_today() -> None:
    learned = learn_bytes_noise([[1802 * MIB, 1930 * MIB]])  # base and A/A arm of one case
    assert learned.groups == 1 and learned.bytes == 128 * MIB
    within = compare_bytes(1802 * MIB, 1930 * MIB, learned, RESERVED_BYTES)
    assert within.verdict is BytesVerdict.inconclusive and within.reason == ""
    beyond = compare_bytes(1802 * MIB, 1802 * MIB + 4 * 128 * MIB + MIB, learned, RESERVED_BYTES)
    assert beyond.verdict is BytesVerdict.regression
    # rounds that agreed to the byte teach a zero noise: one MiB more is then a regression
    steady = learn_bytes_noise([[1802 * MIB, 1802 * MIB]])
    assert compare_bytes(1802 * MIB, 1803 * MIB, steady, RESERVED_BYTES).verdict is BytesVerdict.regression


@pytest.mark.parametrize("values", [OFFLOAD_FP8_CURRENT, OFFLOAD_BF16])
def test_offloaded_against_plain_errors_of_an_a_a_are_inconclusive_never_drift(values) -> None:
    for name, (base, aa) in values.items():
        metric = ErrorMetric.parse(name)
        assert metric is not None
        drift = error_drift(metric, base, aa, NO_BAND, family=noise_family(name))
        assert drift.verdict is DriftVerdict.inconclusive, name
        assert drift.reason.startswith("no runs of identical code yet: offloaded and plain execution")
        assert drift.describe().endswith("; " + drift.reason)
        # today's single-pair rule, without the family, calls each of them drift or an improvement
        assert error_drift(metric, base, aa, NO_BAND).verdict in (
            DriftVerdict.drift,
            DriftVerdict.improvement,
        )


def test_offloaded_against_plain_errors_with_a_learned_band_are_judged_as_today() -> None:
    # fp8-current dgrad rel-L2: base 0.00286 and A/A 0.121 teach a band of 191 % (the spread over the
    # median); the head of an unrelated change measured 0.0435
    metric = ErrorMetric.parse("offloaded_dgrad_vs_plain_rel_l2")
    assert metric is not None
    band = learn_error_band([[0.00286, 0.121]])
    assert band.groups == 1 and band.share == pytest.approx(1.908, abs=1e-3)
    within = error_drift(metric, 0.0435, 0.121, band, family=OFFLOADED_VS_PLAIN)
    assert within.verdict is DriftVerdict.unchanged  # +178 %, within 4 times the band
    beyond = error_drift(metric, 0.00286, 0.0435, band, family=OFFLOADED_VS_PLAIN)
    assert beyond.verdict is DriftVerdict.drift  # +1421 % of the smaller base
    # two runs that agreed to the bit teach a deterministic band: any move is then real
    exact = learn_error_band([[0.00286, 0.00286]])
    assert (
        error_drift(metric, 0.00286, 0.0029, exact, family=OFFLOADED_VS_PLAIN).verdict is DriftVerdict.drift
    )


def test_a_deterministic_family_still_flags_one_percent_on_a_single_pair() -> None:
    peak = compare_bytes(1000 * MIB, 1010 * MIB, UNLEARNED, noise_family("peak_allocated_bytes"))
    assert peak.verdict is BytesVerdict.regression
    metric = ErrorMetric.parse("output_vs_fp32_rel_l2")
    assert metric is not None
    drift = error_drift(metric, 0.0375, 0.0375 * 1.01, NO_BAND, 0.1, noise_family(metric.name))
    assert drift.verdict is DriftVerdict.drift and drift.reason == ""

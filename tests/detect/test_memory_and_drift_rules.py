"""The memory and numerics rules on the kept H200 runs: noise learned from the A/A arms, then each
perturbation of the head judged on a single pair of runs (tests/fixtures/h200-memnum-ab/README.md)."""

from __future__ import annotations

import math

import pytest

from tests.detect.h200_memnum import campaign_records, family, one_value_metrics, values_by_arm
from tewatch.detect.drift import DriftVerdict, ErrorBand, ErrorMetric, error_drift, learn_error_band
from tewatch.detect.memory import (
    ALLOCATOR_BLOCK_BYTES,
    MIB,
    BytesNoise,
    BytesVerdict,
    compare_bytes,
    leak_finding,
    learn_bytes_noise,
)

BYTES = ("setup_allocated_bytes", "peak_allocated_bytes", "peak_reserved_bytes", "steady_allocated_bytes")
SAME_CODE = ("base", "aa")


@pytest.fixture(scope="module")
def table():
    return values_by_arm(("base", "aa", "head"))


@pytest.fixture(scope="module")
def noise_by_family(table) -> dict[str, BytesNoise]:
    groups: dict[str, list[list[float]]] = {}
    for key, metrics in table.items():
        for metric in BYTES:
            if metric in metrics:
                same = [v for arm in SAME_CODE for v in metrics[metric].get(arm, [])]
                groups.setdefault(family(key), []).append(same)
    return {name: learn_bytes_noise(found) for name, found in groups.items()}


def _base_head(arm: str = "head") -> list[tuple[tuple[str, str], str, float, float]]:
    base, other = campaign_records("base"), campaign_records(arm)
    pairs = []
    for key, record in base.items():
        if key in other:
            head_values = one_value_metrics(other[key])
            for metric, values in one_value_metrics(record).items():
                if metric in head_values:
                    pairs.append((key, metric, values[0], head_values[metric][0]))
    return pairs


def test_the_a_a_memory_noise_of_every_family_is_zero_bytes_on_the_h200(noise_by_family) -> None:
    assert set(noise_by_family) == {"checks", "contracts", "gemm", "linear", "offload", "quantize", "rht"}
    for name, noise in noise_by_family.items():
        assert noise.groups >= 3, name
        assert noise.bytes == 0 and noise.share == 0, name
        assert noise.margin(1e9) == ALLOCATOR_BLOCK_BYTES


def test_the_a_a_arm_changes_no_memory_metric(noise_by_family) -> None:
    pairs = [
        p for p in _base_head("aa") if p[1] in (*BYTES, "activation_bytes", "activation_bytes_offloaded")
    ]
    assert len(pairs) == 96
    for key, _, base, head in pairs:
        assert compare_bytes(base, head, noise_by_family[family(key)]).verdict == BytesVerdict.unchanged


def test_each_memory_perturbation_is_called_on_one_pair_with_its_size(noise_by_family) -> None:
    found = {}
    for key, metric, base, head in _base_head():
        if metric in BYTES:
            change = compare_bytes(base, head, noise_by_family[family(key)])
            if change.verdict != BytesVerdict.unchanged:
                found[(key[0], key[1], metric)] = change
    gemm = [
        c
        for (case, _, metric), c in found.items()
        if case == "gemm.Gemm" and metric == "setup_allocated_bytes"
    ]
    assert len(gemm) == 4 and all(c.change == 64 * MIB for c in gemm)  # gemm-extra-workspace-64mib
    assert all(c.verdict == BytesVerdict.regression for c in found.values() if c.change > 0)
    cache = found[
        (
            "quantize.Quantize",
            '{"backend": "te", "shape": "8192x5120", "variant": "fp8-current"}',
            "setup_allocated_bytes",
        )
    ]
    assert cache.change == 80 * MIB  # fp8-current-cache-twice: FP8 data and transpose of 8192x5120
    assert cache.describe("setup_allocated_bytes") == (
        "setup_allocated_bytes 160.0 MiB -> 240.0 MiB, +80.0 MiB (+50.0 %)"
    )
    # the leak's first step, taken by the case's check before its setup ended: 1 MiB, called on one pair
    linear = found[
        ("linear.LinearFwdBwd", '{"mode": "eager", "rank": 2, "recipe": "bf16"}', "setup_allocated_bytes")
    ]
    assert linear.change == MIB and linear.verdict == BytesVerdict.regression
    untouched = {case for case, _, _ in found} & {"rht.Rht", "checks.Determinism", "contracts.RefParity"}
    assert not untouched


def test_a_step_below_a_mib_and_a_percent_is_not_reported_and_one_within_noise_is_inconclusive() -> None:
    quiet = BytesNoise(bytes=0.0, share=0.0, groups=3)
    assert compare_bytes(500 * MIB, 500 * MIB + 4096, quiet).verdict == BytesVerdict.unchanged
    assert compare_bytes(10 * MIB, 10 * MIB + 200 * 1024, quiet).verdict == BytesVerdict.regression  # 2 %
    assert compare_bytes(100 * MIB, 99 * MIB, quiet).verdict == BytesVerdict.improvement
    noisy = BytesNoise(bytes=2 * MIB, share=0.0, groups=3)
    assert compare_bytes(100 * MIB, 102 * MIB, noisy).verdict == BytesVerdict.inconclusive


def test_the_leak_is_a_finding_on_te_linear_and_offload_and_nowhere_in_the_a_a(table) -> None:
    leaks = {}
    for key, metrics in table.items():
        if "leak_bytes_per_step" not in metrics:
            continue
        same = [v for arm in SAME_CODE for v in metrics["leak_bytes_per_step"][arm]]
        for arm in ("base", "aa", "head"):
            for slope, stderr in zip(
                metrics["leak_bytes_per_step"][arm], metrics["leak_stderr_bytes_per_step"][arm], strict=True
            ):
                finding = leak_finding(slope, stderr, same)
                if arm != "head":
                    assert not finding.leak
                elif finding.leak:
                    leaks[key] = finding
    eager = {k: f for k, f in leaks.items() if k[0] == "linear.LinearFwdBwd"}
    assert len(eager) == 8 and all(f.slope == MIB for f in eager.values())  # 4 recipes x ranks 2, 3
    offload = {k: f for k, f in leaks.items() if k[0] == "offload.CpuOffload"}
    assert len(offload) == 2 and all(f.slope == 4 * MIB for f in offload.values())  # four layers a step
    assert all('"eager"' in k[1] for k in eager)  # compiled steps are left alone by the perturbation
    assert next(iter(eager.values())).describe() == "leak 1.00 MiB/step (threshold 512 B/step)"


def test_a_slope_within_its_fit_error_or_what_identical_code_showed_is_no_leak() -> None:
    assert not leak_finding(3000.0, 1000.0).leak
    assert not leak_finding(3000.0, 0.0, same_code_slopes=[-1000.0, 800.0]).leak
    assert leak_finding(5000.0, 1000.0).leak


def _error_pairs(arm: str):
    for key, metric, base, head in _base_head(arm):
        parsed = ErrorMetric.parse(metric)
        if parsed:
            yield key, parsed, base, head


def test_every_error_metric_is_identical_between_runs_of_the_same_code(table) -> None:
    groups = [
        [v for arm in SAME_CODE for v in metrics[m].get(arm, [])]
        for metrics in table.values()
        for m in metrics
        if ErrorMetric.parse(m)
    ]
    assert len(groups) > 150
    band = learn_error_band(groups)
    assert band.deterministic and band.groups == len(groups)


def test_the_fp8_shift_is_drift_with_its_size_while_every_verdict_passes() -> None:
    band = ErrorBand(share=0.0, groups=3)
    drifts = {}
    for key, metric, base, head in _error_pairs("head"):
        drift = error_drift(metric, base, head, band, tolerance=0.1)
        if drift.verdict != DriftVerdict.unchanged:
            drifts[(key, metric.name)] = drift
    assert drifts and all(d.verdict == DriftVerdict.drift for d in drifts.values())
    assert {'"recipe": "fp8-current"' in k[1] or '"fp8-current"' in k[1] for k, _ in drifts} == {True}
    linear = drifts[
        (
            ("linear.LinearFwdBwd", '{"mode": "eager", "rank": 2, "recipe": "fp8-current"}'),
            "output_vs_fp32_rel_l2",
        )
    ]
    assert linear.describe() == "rel-L2 of output vs fp32 0.0375 -> 0.0427, +13.7 %, tolerance 0.1"
    quantize = drifts[
        (
            ("quantize.Quantize", '{"backend": "te", "shape": "8192x5120", "variant": "fp8-current"}'),
            "dequantized_vs_input_rel_l2",
        )
    ]
    assert math.isclose(quantize.change, 0.0703, abs_tol=5e-4)
    # compiled against eager stays bit for bit: both sides are shifted alike
    assert not any("compiled" in name for _, name in drifts)
    head = campaign_records("head")
    assert {r["verdict"]["status"] for k, r in head.items() if "fp8-current" in k[1]} == {"pass"}


def test_the_a_a_arm_drifts_nowhere_and_an_error_that_falls_is_an_improvement() -> None:
    band = ErrorBand(share=0.0, groups=3)
    pairs = list(_error_pairs("aa"))
    assert len(pairs) == 165
    assert {error_drift(m, b, h, band).verdict for _, m, b, h in pairs} == {DriftVerdict.unchanged}
    for _, metric, base, head in _error_pairs("head"):
        if base != head:  # the head's numbers as the base: the fix of a drift
            assert error_drift(metric, head, base, band).verdict == DriftVerdict.improvement


def test_a_non_deterministic_metric_moves_within_its_band_without_drift() -> None:
    band = learn_error_band([[0.100, 0.101, 0.0995], [0.2, 0.2]])
    assert not band.deterministic and math.isclose(band.share, 0.015, rel_tol=1e-9)
    metric = ErrorMetric.parse("output_vs_fp32_rel_l2")
    assert error_drift(metric, 0.100, 0.104, band).verdict == DriftVerdict.unchanged
    assert error_drift(metric, 0.100, 0.107, band).verdict == DriftVerdict.drift
    sqnr = ErrorMetric.parse("output_vs_fp32_sqnr_db")
    assert error_drift(sqnr, 20.0, 25.0, band).verdict == DriftVerdict.improvement


def test_metric_names_are_taken_apart_into_what_reference_and_kind() -> None:
    parsed = ErrorMetric.parse("compiled_output_vs_eager_max_abs")
    assert (parsed.what, parsed.reference, parsed.kind) == ("compiled_output", "eager", "max_abs")
    assert parsed.label == "max-abs of compiled output vs eager"
    assert ErrorMetric.parse("peak_allocated_bytes") is None
    assert ErrorMetric.parse("vs_fp32_rel_l2") is None

"""The Kernels section assembled from kernel evidence and the timings the comparer found changed (no
database): suspect speed-ups leave Improvements, compile times leave Regressions, changed timings are
attributed, host and compile timings are not."""

from __future__ import annotations

from tewatch.detect.kernels import Kernel, KernelTable
from tewatch.findings.pr_report import TimingChange
from tewatch.pipeline.history import SeriesInfo
from tewatch.pipeline.kernels import CaseKernels, ChangedTiming, KernelEvidence, kernel_findings

GEMM = "nvjet_tst_128x256_64x4_1x2_h_bz_coopA_TNT"
QUANTIZE = "transformer_engine::detail::cast_transpose_kernel<nvte_fp8e4m3>"


def info(case_id: int, metric: str, unit: str = "seconds") -> SeriesInfo:
    return SeriesInfo(
        key=f"{case_id}-{metric}",
        series_id=None,
        case_id=case_id,
        benchmark=f"gemm.Gemm.{metric}",
        params={},
        unit=unit,
        higher_is_better=unit != "seconds",
        gpu_model="NVIDIA H200",
        kind="metric" if metric != "track_seconds" else "track",
    )


def changed(
    series_id: int, case_id: int, metric: str, verdict: str, base: float, head: float
) -> ChangedTiming:
    timing = TimingChange(
        benchmark=f"gemm.Gemm.{metric}(case={case_id})",
        unit="seconds",
        baseline=base,
        head=head,
        effect=head / base - 1,
        series_id=series_id,
    )
    return ChangedTiming(series_id, info(case_id, metric), verdict, timing)


def table(*kernels: tuple[str, float, float]) -> KernelTable:
    return KernelTable(tuple(Kernel(*k) for k in kernels), 3.0, 0.0, 0.0)


BASE = table((GEMM, 1.0, 300e-6), (QUANTIZE, 2.0, 40e-6))


def test_a_speed_up_that_drops_a_kernel_is_suspect_not_an_improvement():
    skipped = table((QUANTIZE, 2.0, 40e-6))  # the GEMM no longer runs
    evidence = KernelEvidence({1: CaseKernels("gemm.Gemm(case=1)", skipped, [BASE])})
    rows, taken = kernel_findings(evidence, [changed(10, 1, "track_seconds", "improvement", 350e-6, 45e-6)])
    kinds = [(r.what, r.verdict) for r in rows]
    assert kinds == [("kernel set", "changed"), ("suspect speed-up", "suspect")]
    assert rows[0].description == f"disappeared: {GEMM} (1 per call)"
    assert rows[1].description == "faster, but the kernel list changed" and rows[1].series_id == 10
    assert taken == {10}


def test_a_speed_up_beyond_the_bytes_moved_ceiling_is_suspect_with_or_without_a_kernel_table():
    for cases in ({1: CaseKernels("gemm.Gemm(case=1)", BASE, [BASE])}, {}):
        evidence = KernelEvidence(cases, share_of_ceiling={1: 1.3})
        rows, taken = kernel_findings(
            evidence, [changed(10, 1, "track_seconds", "improvement", 350e-6, 200e-6)]
        )
        assert [(r.what, r.description) for r in rows] == [
            ("suspect speed-up", "faster, but 1.30 of the bytes-moved ceiling")
        ]
        assert taken == {10}


def test_a_speed_up_whose_timed_output_was_wrong_is_suspect_and_a_slowdown_is_not():
    evidence = KernelEvidence(wrong_output={1})
    rows, taken = kernel_findings(
        evidence,
        [
            changed(10, 1, "track_seconds", "improvement", 350e-6, 20e-6),
            changed(11, 2, "track_seconds", "improvement", 350e-6, 300e-6),
        ],
    )
    assert [(r.series_id, r.verdict, r.description) for r in rows] == [
        (10, "suspect", "faster, but its timed output was wrong")
    ]
    assert taken == {10}


def test_a_regression_is_attributed_and_compile_and_host_times_are_not():
    slower = table((GEMM, 1.0, 300e-6), (QUANTIZE, 2.0, 78e-6))
    evidence = KernelEvidence({1: CaseKernels("gemm.Gemm(case=1)", slower, [BASE])})
    rows, taken = kernel_findings(
        evidence,
        [
            changed(10, 1, "kernel_seconds", "regression", 340e-6, 381e-6),
            changed(11, 1, "compile_seconds", "regression", 1.6, 2.9),
            changed(12, 1, "cpu_seconds", "regression", 20e-6, 30e-6),
        ],
    )
    assert [(r.what, r.series_id, r.description) for r in rows] == [
        ("compile time", 11, "compile 1.6 s -> 2.9 s"),
        ("attribution", 10, f"{QUANTIZE} +38 us of +41 us"),
    ]
    assert taken == {11}  # the compile time is the Kernels section's; the kernel time stays a regression


def test_a_case_without_base_tables_gets_no_kernel_rows():
    evidence = KernelEvidence({1: CaseKernels("gemm.Gemm(case=1)", BASE, [])})
    rows, taken = kernel_findings(evidence, [changed(10, 1, "track_seconds", "regression", 1e-3, 2e-3)])
    assert rows == [] and taken == set()

"""The pr.report Markdown against snapshot files (set TEWATCH_UPDATE_SNAPSHOTS=1 to rewrite them)."""

import os
from pathlib import Path

import pytest

from tewatch.alerts.markdown import render_pr_report
from tewatch.findings.pr_report import CaseFailure, CaseFixed, PrReport, TimingChange

SNAPSHOTS = Path(__file__).parent / "snapshots"


def timing(benchmark, unit, baseline, head, effect, ci_low, ci_high, series_id) -> TimingChange:
    return TimingChange(
        benchmark=benchmark,
        unit=unit,
        baseline=baseline,
        head=head,
        effect=effect,
        ci_low=ci_low,
        ci_high=ci_high,
        series_id=series_id,
    )


def report(**overrides) -> PrReport:
    fields = {
        "pr_number": 3626,
        "head_sha": "a" * 40,
        "base_sha": "b" * 40,
        "gpu_model": "NVIDIA B200",
        "public_url": "https://tewatch.example/",
        "run_id": 2,
        "base_run_ids": [1],
        "min_effect": 0.03,
        "alpha": 0.05,
        "detector_version": "tewatch-detect/1.0",
        "counts": {"regression": 2, "improvement": 1, "unchanged": 40, "inconclusive": 3},
        "correctness": [
            CaseFailure(
                case="linear.LinearFwdBwd(mode=default, rank=3, recipe=nvfp4)",
                previous="pass",
                status="error",
                detail="compiled_vs_eager: RuntimeError: shape '[2, 2, 1024]' is invalid for input | <script>alert(1)</script>",
                case_id=7,
            )
        ],
        "regressions": [
            timing(
                "quantize.Quantize.time(recipe=nvfp4, rht=True, shape=8192x8192)",
                "seconds",
                1.52e-4,
                1.71e-4,
                0.125,
                0.09,
                0.16,
                11,
            ),
            timing(
                "gemm.Gemm.tflops(recipe=nvfp4, shape=8192x8192x5120)",
                "TFLOP/s",
                1800.0,
                1700.0,
                -0.0556,
                -0.08,
                -0.03,
                12,
            ),
        ],
        "improvements": [
            timing("rht.Rht.time(shape=8192x8192)", "seconds", 2.0e-3, 1.8e-3, -0.1, -0.12, -0.08, None)
        ],
    }
    fields.update(overrides)
    return PrReport(**fields)


FIXED = [
    CaseFixed(
        case=f"contracts.ShapeContract(rank={rank}, recipe=nvfp4, shape={shape})",
        previous="error",
        previous_detail=f"shape_contract: ValueError: nvfp4 needs the last two dims divisible by 16, got {shape} | <b>x</b>",
        case_id=20 + i,
    )
    for i, (rank, shape) in enumerate([(3, "2x3x1024"), (3, "4x7x256"), (4, "2x2x3x1024")])
] + [
    CaseFixed(
        case="linear.Linear(recipe=nvfp4)",
        previous="fail_accuracy",
        previous_detail="compiled_vs_eager: max_abs_err = 0.5 > tolerance 0.01",
    )
]


@pytest.mark.parametrize(
    "name, overrides",
    [
        ("pr_report_full", {}),
        (
            "pr_report_quiet",
            {
                "correctness": [],
                "regressions": [],
                "improvements": [],
                "counts": {"unchanged": 44, "inconclusive": 2},
            },
        ),
        ("pr_report_fixed", {"fixed": FIXED}),
        (
            "pr_report_no_base_runs",
            {
                "correctness": [],
                "regressions": [],
                "improvements": [],
                "base_run_ids": [],
                "machine": "h200-runner-1",
                "counts": {"inconclusive": 66},
            },
        ),
        (
            "pr_report_only_fixed",
            {
                "correctness": [],
                "regressions": [],
                "improvements": [],
                "fixed": FIXED[:1],
                "counts": {"unchanged": 44},
            },
        ),
    ],
)
def test_pr_report_markdown_matches_its_snapshot(name, overrides):
    rendered = render_pr_report(report(**overrides))
    path = SNAPSHOTS / f"{name}.md"
    if os.environ.get("TEWATCH_UPDATE_SNAPSHOTS"):
        path.write_text(rendered)
    assert rendered == path.read_text()


def test_correctness_comes_before_timing_and_upload_text_is_escaped():
    rendered = render_pr_report(report())
    assert rendered.index("### Correctness") < rendered.index("### Largest regressions")
    assert "<script>" not in rendered and "&lt;script&gt;" in rendered
    assert "\\| &lt;script" in rendered  # a pipe cannot end the table cell
    assert "https://tewatch.example/series/11" in rendered and "https://tewatch.example/pr/3626" in rendered


def test_fixes_come_after_correctness_failures_and_before_timing():
    rendered = render_pr_report(report(fixed=FIXED))
    assert (
        rendered.index("### Correctness")
        < rendered.index("### Fixed by this pull request")
        < rendered.index("### Largest regressions")
    )
    assert "4 fixed" in rendered and "https://tewatch.example/case/21" in rendered
    assert "<b>" not in rendered and "&lt;b&gt;" in rendered
    assert "### Fixed" not in render_pr_report(report())
    many = render_pr_report(report(fixed=FIXED * 3))
    assert "12 fixed" in many and "| … and 2 more | | | |" in many


def test_a_report_with_only_fixes_does_not_say_nothing_happened():
    quiet = {"counts": {"unchanged": 40}, "correctness": [], "regressions": [], "improvements": []}
    rendered = render_pr_report(report(**quiet, fixed=FIXED[:1]))
    assert "No correctness failure" not in rendered and "No new correctness failure" in rendered
    assert "ValueError: nvfp4 needs" in rendered

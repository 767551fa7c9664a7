"""The one shape of a pull request's findings: every section reaches the payload, its schema and the
comment; the payload parses back as GitHub's side reads it; an earlier payload still parses; the schema in
docs/pr-report.md is the model's."""

from __future__ import annotations

import json
from pathlib import Path

from tewatch.alerts.markdown import render_pr_report
from tewatch.findings.headline import headline
from tewatch.findings.pr_report import (
    SECTIONS,
    CaseFailure,
    CaseFixed,
    KernelFinding,
    MemoryChange,
    NumericsChange,
    PrReport,
    PrReportPayload,
    TimingChange,
    TrainingCase,
    payload_schema,
)
from tewatch.github.report import commit_state, parse_report
from tewatch.pipeline.pr_comparison import pr_report_event

ROOT = Path(__file__).resolve().parents[2]
FAILURE = CaseFailure(
    case="ops.Scale(rank=3)", case_id=4, previous="pass", status="error", detail="E: x | <b>"
)
SLOWER_BY_A_FIFTH = {"baseline": 1e-3, "head": 1.2e-3, "effect": 0.2, "ci_low": 0.1, "ci_high": 0.3}
ROWS = {
    "correctness": [FAILURE],
    "fixed": [CaseFixed(case="ops.Fixed()", case_id=5, previous="error", previous_detail="was broken")],
    "regressions": [
        TimingChange(benchmark="gemm.Gemm.track_seconds", unit="seconds", series_id=9, **SLOWER_BY_A_FIFTH)
    ],
    "improvements": [
        TimingChange(benchmark="rht.Rht.track_seconds", unit="seconds", baseline=2e-3, head=1e-3, effect=-0.5)
    ],
    "memory": [
        MemoryChange(
            benchmark="gemm.Gemm.setup_allocated_bytes",
            series_id=11,
            verdict="regression",
            base_bytes=224 * 2**20,
            head_bytes=288 * 2**20,
            change_bytes=64 * 2**20,
            change_share=64 / 224,
        ),
        MemoryChange(
            benchmark="linear.LinearFwdBwd.leak_bytes_per_step",
            verdict="leak",
            leak_bytes_per_step=2**20,
            leak=True,
        ),
    ],
    "numerics": [
        NumericsChange(
            benchmark="linear.LinearFwdBwd.output_vs_bf16_rel_l2",
            metric="rel-L2 of output vs bf16",
            verdict="drift",
            base=0.0312,
            head=0.0318,
            change=0.0192,
            tolerance=0.05,
            description="rel-L2 of output vs bf16 0.0312 -> 0.0318, +1.9 %, tolerance 0.05",
        )
    ],
    "kernels": [
        KernelFinding(
            benchmark="quantize.Quantize(recipe=fp8-current)",
            case_id=6,
            what="kernel set",
            description="appeared: triton_poi_fused_mul (2 per call); syncs per call 0 -> 1",
            verdict="changed",
        ),
        KernelFinding(
            benchmark="gemm.Gemm.track_seconds",
            series_id=9,
            what="attribution",
            description="nvjet_tst_#x#_h_bz_TNT +38 us of +41 us",
            change=0.2,
            verdict="regression",
        ),
    ],
    "training": [
        TrainingCase(
            benchmark="training.TrainSteps(backend=te, execution=eager, recipe=fp8-current)",
            case_id=21,
            run_id=2,
            recipe="fp8-current",
            execution="eager",
            step_seconds=0.125,
            peak_bytes=3 * 2**30,
            reference="bf16 eager",
            verdict="within",
            description="within the band of bf16 eager; largest 0.0123 at step 3; final +0.004",
            base_verdict="diverged",
            base_first_divergent_step=11,
            base_description="parts from the base at step 11 (+0.031, band 0)",
        )
    ],
    "known_failures": [FAILURE.model_copy(update={"previous": "error", "case": "ops.Known()"})],
}


def full_report() -> PrReport:
    return PrReport(
        pr_number=12,
        head_sha="a" * 40,
        base_sha="b" * 40,
        gpu_model="NVIDIA H200",
        machine="h200-1",
        run_id=2,
        base_run_ids=[1],
        public_url="https://tw.example/",
        **ROWS,
    )


def test_every_section_has_rows_whose_cells_fit_its_columns_and_a_field_of_the_report():
    report = full_report()
    assert {s.field for s in SECTIONS} == set(ROWS)
    for section in SECTIONS:
        for row in report.rows(section):
            assert len(row.cells(report.pr_number)) == len(section.columns), section.field


def test_the_comment_shows_what_changed_and_leaves_known_failures_to_the_page():
    markdown = render_pr_report(full_report())
    for section in SECTIONS:
        assert (f"### {section.title}" in markdown) is section.changed
    assert "[`gemm.Gemm.track_seconds`](https://tw.example/series/9?pr=12)" in markdown
    assert "| **+20.0 %** | +10.0 % … +30.0 % |" in markdown
    assert "| — |" in markdown  # an improvement without an interval
    assert "&lt;b&gt;" in markdown and "<b>" not in markdown
    assert "| 224 MiB | 288 MiB | +64.0 MiB | **+28.6 %** |  | **regression** |" in markdown
    assert "| — | — |  | — | leak 1.00 MiB/step | **leak** |" in markdown  # a leak and no byte change
    assert "0.0312 -&gt; 0.0318, +1.9 %, tolerance 0.05 | **drift** |" in markdown
    assert (
        "1 leaking case · 1 error metric drifting · 1 kernel-set change · 1 training case diverging"
        in markdown
    )
    assert (
        "| kernel set | appeared: triton\\_poi\\_fused\\_mul (2 per call); syncs per call 0 -&gt; 1 | — |"
        in markdown
    )
    assert "[`quantize.Quantize(recipe=fp8-current)`](https://tw.example/case/6)" in markdown
    assert "+38 us of +41 us | **+20.0 %** | **regression** |" in markdown
    assert "(https://tw.example/case/21?run=2#training)" in markdown
    assert "parts from the base at step 11 (+0.031, band 0) | **diverged** |" in markdown
    alone = ROWS["training"][0].model_copy(update={"verdict": "", "description": "", "base_verdict": ""})
    cells = [c.text for c in alone.cells(12)[3:]]
    assert cells[:2] == ["no reference in the run", "—"] and cells[3] == "—"


def test_the_payload_parses_back_into_the_same_report_on_githubs_side():
    report = full_report()
    payload = pr_report_event(report)
    assert payload["links"] == {"pr": "https://tw.example/pr/12", "alerts": "https://tw.example/alerts"}
    assert payload["correctness_failures"] == 1 and payload["regressions"][0]["series_id"] == 9
    assert payload["memory_failures"] == 1 and payload["numerics_drift"] == 1
    assert payload["kernel_changes"] == 1 and payload["kernels"][1]["what"] == "attribution"
    assert payload["training_divergences"] == 1 and payload["training"][0]["base_first_divergent_step"] == 11
    envelope = {"id": "e1", "type": "pr.report", "created_at": "2026-12-01T10:00:00+00:00", "data": payload}
    event = parse_report(json.dumps(envelope))
    assert PrReport.model_validate(event.report.model_dump(exclude={"markdown"})) == report
    assert event.report.markdown == render_pr_report(report)
    assert commit_state(event) == (
        "failure",
        "1 new correctness failure, 0 regressions against the merge base; 1 leaking case; "
        "1 training case diverging",
    )


def test_a_payload_of_the_earlier_shape_still_parses():
    kept = json.loads((ROOT / "tests/fixtures/h200-campaign/pr-report-webhook.json").read_text())["body"]
    event = parse_report(json.dumps(kept))
    data = kept["data"]
    assert event.report.correctness_failures == data["correctness_failures"] == 2
    assert (
        event.report.links.pr == data["links"]["pr"]
        and headline(event.report).count("regressions") == data["counts"]["regression"]
    )
    assert event.report.correctness == [] and event.report.base_run_ids == data["base_run_ids"]


def test_docs_show_the_schema_generated_from_the_model():
    doc = (ROOT / "docs" / "pr-report.md").read_text()
    assert f"```json\n{payload_schema()}\n```" in doc, "run scripts/pr_report_schema.py"
    schema = json.loads(payload_schema())
    assert set(ROWS) <= set(schema["properties"]) and "markdown" in schema["required"]
    assert PrReportPayload.model_json_schema(mode="serialization") == schema


def test_a_leak_or_a_diverging_trajectory_alone_fails_the_commit_status_and_drift_alone_does_not():
    def state(**rows) -> str:
        report = full_report().model_copy(
            update={
                "correctness": [],
                "regressions": [],
                "improvements": [],
                "memory": [],
                "numerics": [],
                "training": [],
            }
        )
        data = report.model_dump() | rows
        for count in (
            "correctness_failures",
            "memory_failures",
            "numerics_drift",
            "kernel_changes",
            "training_divergences",
        ):
            data.pop(count)
        payload = pr_report_event(PrReport.model_validate(data))
        envelope = {
            "id": "e",
            "type": "pr.report",
            "created_at": "2026-12-01T10:00:00+00:00",
            "data": payload,
        }
        return commit_state(parse_report(json.dumps(envelope)))[0]

    assert state(memory=[ROWS["memory"][1].model_dump()]) == "failure"
    assert state(numerics=[ROWS["numerics"][0].model_dump()]) == "success"
    assert state(memory=[ROWS["memory"][0].model_dump()]) == "success"  # more bytes alone: reported
    assert state(training=[ROWS["training"][0].model_dump()]) == "failure"
    within = ROWS["training"][0].model_copy(update={"base_verdict": "within"})
    assert state(training=[within.model_dump()]) == "success"

"""The headline of a pull request's report: every row type of every section says what it counts for (a
failure, a note or nothing), and each finding alone makes the comment's headline, the page's and the commit
status say so; a suspect speed-up is counted apart, never as an improvement."""

from __future__ import annotations

import json
import typing

import pytest

from tewatch.alerts.markdown import render_pr_report
from tewatch.findings.headline import combined, headline
from tewatch.findings.pr_report import (
    SECTIONS,
    CaseFailure,
    KernelFinding,
    MemoryChange,
    NumericsChange,
    PrReport,
    Row,
    TrainingCase,
)
from tewatch.findings.table import Cell
from tewatch.github.report import commit_state, parse_report
from tewatch.pipeline.pr_comparison import pr_report_event

QUIET_SENTENCE = "No correctness failure and no timing change beyond the minimum effect."
TRAINING = "training.TrainSteps(backend=te, execution=graphed, recipe=fp8-current)"


def report(**fields) -> PrReport:
    data = {
        "pr_number": 5,
        "head_sha": "a" * 40,
        "base_sha": "b" * 40,
        "gpu_model": "NVIDIA H200",
        "run_id": 2,
        "base_run_ids": [1],
        "case_counts": {"unchanged": 40, "inconclusive": 2},
    }
    return PrReport(**(data | fields))


def status(built: PrReport) -> tuple[str, str]:
    envelope = {"id": "e", "type": "pr.report", "created_at": "2026-12-03T10:00:00+00:00"}
    return commit_state(parse_report(json.dumps(envelope | {"data": pr_report_event(built)})))


def training(**fields) -> TrainingCase:
    return TrainingCase(benchmark=TRAINING, case_id=3, run_id=2, **fields)


def kernels(what, verdict, description="graph breaks 2 -> 3") -> KernelFinding:
    return KernelFinding(
        benchmark="linear.LinearFwdBwd(mode=default)", what=what, description=description, verdict=verdict
    )


FOUND = {
    "a NaN loss": (
        {"correctness": [CaseFailure(case=TRAINING, previous="pass", status="fail_accuracy", detail="training: non_finite_steps 3")]},
        "1 correctness failure",
        "failure",
    ),
    "a failed capture": (
        {"correctness": [CaseFailure(case=TRAINING, previous="pass", status="error", detail="graph_capture: RuntimeError: capture")]},
        "1 correctness failure",
        "failure",
    ),
    "a leak": (
        {"memory": [MemoryChange(benchmark="gemm.Gemm.leak_bytes_per_step", verdict="leak", leak=True, leak_bytes_per_step=2**20)]},
        "1 leaking case",
        "failure",
    ),
    "drift": (
        {"numerics": [NumericsChange(benchmark="gemm.Gemm.rel_l2", metric="rel-L2", verdict="drift", base=0.03, head=0.04, change=0.33)]},
        "1 error metric drifting",
        "success",
    ),
    "a kernel-set change": (
        {"kernels": [kernels("kernel set", "changed", "appeared: triton_poi_fused_mul (2 per call)")]},
        "1 kernel-set change",
        "success",
    ),
    "a new graph break": ({"kernels": [kernels("graph breaks", "regression")]}, "1 case with new graph breaks", "failure"),
    "a training divergence against the base": (
        {"training": [training(verdict="equal", base_verdict="diverged", base_first_divergent_step=11)]},
        "1 training case diverging",
        "failure",
    ),
    "a training divergence in the run": (
        {"training": [training(verdict="diverged", first_divergent_step=4), training(verdict="within")]},
        "1 training case diverging",
        "failure",
    ),
    "an incomparable trajectory": ({"training": [training(verdict="incomparable")]}, "1 training case not comparable", "success"),
    "a suspect speed-up": (
        {"case_counts": {"suspect": 1, "unchanged": 40}, "kernels": [kernels("suspect speed-up", "suspect", "faster, but its timed output was wrong")]},
        "0 improvements · 1 suspect speed-up",
        "success",
    ),
}  # fmt: skip


@pytest.mark.parametrize("name", FOUND)
def test_each_finding_alone_is_in_the_headline_of_the_comment_and_the_status(name):
    fields, words, state = FOUND[name]
    built = report(**fields)
    said = headline(built)
    assert words in said.text and not said.quiet
    markdown = render_pr_report(built)
    assert f"**{said.text}** (cases)" in markdown and QUIET_SENTENCE not in markdown
    found_state, description = status(built)
    assert found_state == state
    last = words.split(" · ")[-1]
    assert {"1 correctness failure": "1 new correctness failure"}.get(last, last) in description


def test_what_counts_for_nothing_leaves_the_report_quiet():
    fewer_breaks = kernels("graph breaks", "improvement", "graph breaks 3 -> 2")
    within = training(verdict="within", base_verdict="equal")
    bytes_only = MemoryChange(benchmark="gemm.Gemm.setup_allocated_bytes", verdict="regression")
    built = report(kernels=[fewer_breaks], training=[within], memory=[bytes_only])
    assert headline(built).quiet and QUIET_SENTENCE in render_pr_report(built)
    assert status(built) == ("success", "no new correctness failure or regression")


def test_a_suspect_speed_up_is_never_an_improvement_in_the_headline():
    counts = {"regression": 1, "improvement": 2, "suspect": 1, "unchanged": 30}
    said = headline(report(case_counts=counts))
    assert said.text == (
        "0 correctness failures · 1 regression · 2 improvements · 1 suspect speed-up · 30 unchanged · "
        "0 inconclusive"
    )
    assert said.count("improvements") == 2 and said.count("suspects") == 1


def test_every_sections_row_type_decides_what_it_counts_for_and_a_new_one_cannot_forget():
    for section in SECTIONS:
        (row_type,) = typing.get_args(PrReport.model_fields[section.field].annotation)
        assert issubclass(row_type, Row) and not row_type.__abstractmethods__, section.field

    class Forgetful(Row):
        name: str

        def cells(self, pr_number: int) -> tuple[Cell, ...]:
            return (Cell("case", self.name),)

    with pytest.raises(TypeError, match="finding"):
        Forgetful(name="x")


def test_the_headlines_of_two_machines_add_up():
    one = headline(
        report(case_counts={"regression": 1, "unchanged": 3}, training=[training(verdict="diverged")])
    )
    two = headline(report(case_counts={"improvement": 2, "unchanged": 5}))
    both = combined([one, two])
    assert both is not None and combined([]) is None
    assert both.count("regressions") == 1 and both.count("improvements") == 2 and both.count("unchanged") == 8
    assert both.count("divergences") == 1 and both.failed

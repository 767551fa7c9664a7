"""The comment's sections per GPU and the commit status a report sets: pure functions, no server."""

from __future__ import annotations

import json

import pytest

from tests.github.reports import report_payload
from tewatch.github.comment import (
    MARKER,
    BisectionLine,
    bisection_lines,
    comment_body,
    is_ours,
    sections,
    with_bisection,
)
from tewatch.github.report import DESCRIPTION_CHARS, ReportError, commit_state, parse_report

H1, H2 = "a" * 40, "c" * 40


def event(at: str, head: str = H1, **kwargs):
    body = {
        "id": f"ev-{at}",
        "type": "pr.report",
        "created_at": f"2026-12-01T{at}+00:00",
        "data": report_payload(12, head, **kwargs),
    }
    return parse_report(json.dumps(body))


def test_the_first_report_starts_the_comment_with_the_marker():
    body = comment_body(None, event("10:00:00"))
    assert is_ours(body) and body.startswith(MARKER + "\n")
    [section] = sections(body)
    assert (section.gpu_model, section.head_sha) == ("NVIDIA H200", H1)
    assert section.markdown.startswith("## tewatch: PR #12 on NVIDIA H200")


def test_a_gpu_section_is_replaced_and_the_other_gpus_kept():
    body = comment_body(None, event("10:00:00", gpu="NVIDIA B200 (sm_100)"))
    body = comment_body(body, event("10:01:00", regressions=1))
    body = comment_body(body, event("10:02:00", regressions=2))
    assert [(s.gpu_model, "2 regressions" in s.markdown) for s in sections(body)] == [
        ("NVIDIA B200 (sm_100)", False),
        ("NVIDIA H200", True),
    ]


def test_a_late_older_report_changes_nothing():
    body = comment_body(None, event("10:05:00.250000"))
    assert comment_body(body, event("10:05:00")) is None
    newer_head = comment_body(body, event("10:06:00", head=H2, gpu="NVIDIA B200"))
    assert comment_body(newer_head, event("10:05:30", gpu="NVIDIA GB200")) is None  # of the head left behind


def test_a_new_head_drops_the_sections_of_the_old_one():
    body = comment_body(None, event("10:00:00", gpu="NVIDIA B200"))
    body = comment_body(body, event("10:00:01"))
    body = comment_body(body, event("11:00:00", head=H2))
    assert [(s.gpu_model, s.head_sha) for s in sections(body)] == [("NVIDIA H200", H2)]


def test_quotes_and_other_comments_are_not_ours():
    assert not is_ours(f"> {MARKER}\n> quoted") and not is_ours("") and not is_ours(None)


@pytest.mark.parametrize(
    ("counts", "state", "description"),
    [
        ({"failures": 1}, "failure", "1 new correctness failure, 0 regressions against the merge base"),
        ({"regressions": 3}, "failure", "0 new correctness failures, 3 regressions against the merge base"),
        ({"improvements": 2}, "success", "no new correctness failure or regression; 2 improvements"),
        ({}, "success", "no new correctness failure or regression"),
    ],
)
def test_the_status_fails_on_a_new_correctness_failure_or_regression(counts, state, description):
    assert commit_state(event("10:00:00", **counts)) == (state, description)
    assert len(description) <= DESCRIPTION_CHARS


def test_a_body_that_is_not_a_pr_report_is_refused():
    with pytest.raises(ReportError, match=r"not a pr.report event: data\.pr_number: Field required"):
        parse_report(json.dumps({"id": "x", "created_at": "2026-12-01T10:00:00+00:00", "data": {"n": 1}}))


def test_a_bisection_line_is_kept_once_per_bisection_and_cannot_spill_out_of_its_block():
    body = comment_body(None, event("10:00:00"))
    body = with_bisection(body, BisectionLine(3, "first\n<!-- /tewatch:bisection -->\nsecond"))
    body = with_bisection(body, BisectionLine(1, "one"))
    body = with_bisection(body, BisectionLine(3, "three"))
    assert bisection_lines(body) == [BisectionLine(1, "one"), BisectionLine(3, "three")]
    assert len(sections(body)) == 1 and is_ours(body)
    assert bisection_lines(comment_body(body, event("10:01:00", regressions=1)) or "") == bisection_lines(
        body
    )

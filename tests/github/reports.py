"""`pr.report` events as the pipeline emits them, for a given pull request, head, GPU and verdicts."""

from __future__ import annotations

from sqlalchemy.orm import Session

from tewatch.alerts.events import EventType, emit
from tewatch.alerts.markdown import CorrectnessRow, PrReport, TimingRow, render_pr_report

PUBLIC_URL = "http://tewatch.example"


def report_payload(
    pr: int,
    head: str,
    gpu: str = "NVIDIA H200",
    failures: int = 0,
    regressions: int = 0,
    improvements: int = 0,
    repo: str = "acme/TransformerEngine",
) -> dict:
    report = PrReport(
        pr_number=pr,
        head_sha=head,
        base_sha="b" * 40,
        gpu_model=gpu,
        public_url=PUBLIC_URL,
        correctness=[
            CorrectnessRow(
                f"contracts.ShapeContract(quantizer=fp8-current, rank={3 + n})",
                "pass",
                "error",
                "ShapeContractMismatch: columnwise 2-D, predicted 3-D",
            )
            for n in range(failures)
        ],
        regressions=[
            TimingRow(f"quantize.Quantize.track_seconds(n={n})", "seconds", 1e-4, 2e-4, 1.0, 0.9, 1.1)
            for n in range(regressions)
        ],
        case_counts={"regression": regressions, "improvement": improvements, "unchanged": 40},
    )
    return {
        "pr_number": pr,
        "repo": repo,
        "head_sha": head,
        "base_sha": "b" * 40,
        "gpu_model": gpu,
        "run_id": 1,
        "base_run_ids": [],
        "counts": {},
        "case_counts": report.case_counts,
        "rounds": None,
        "correctness_failures": failures,
        "markdown": render_pr_report(report),
        "detector_version": "test",
        "links": {"pr": f"{PUBLIC_URL}/pr/{pr}", "alerts": f"{PUBLIC_URL}/alerts"},
        "fixed": [],
    }


def emit_report(session: Session, pr: int, head: str, **counts) -> str:
    return emit(session, EventType.pr_report, report_payload(pr, head, **counts)).id

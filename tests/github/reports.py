"""`pr.report` events as the pipeline emits them, for a given pull request, head, GPU and verdicts."""

from __future__ import annotations

from sqlalchemy.orm import Session

from tewatch.alerts.events import EventType, emit
from tewatch.findings.pr_report import CaseFailure, PrReport, TimingChange
from tewatch.pipeline.pr_comparison import pr_report_event

PUBLIC_URL = "http://tewatch.example"
TWICE_AS_SLOW = {"baseline": 1e-4, "head": 2e-4, "effect": 1.0, "ci_low": 0.9, "ci_high": 1.1}


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
        repo=repo,
        head_sha=head,
        base_sha="b" * 40,
        gpu_model=gpu,
        run_id=1,
        base_run_ids=[1],
        public_url=PUBLIC_URL,
        correctness=[
            CaseFailure(
                case=f"contracts.ShapeContract(quantizer=fp8-current, rank={3 + n})",
                previous="pass",
                status="error",
                detail="ShapeContractMismatch: columnwise 2-D, predicted 3-D",
            )
            for n in range(failures)
        ],
        regressions=[
            TimingChange(benchmark=f"quantize.Quantize.track_seconds(n={n})", unit="seconds", **TWICE_AS_SLOW)
            for n in range(regressions)
        ],
        case_counts={"regression": regressions, "improvement": improvements, "unchanged": 40},
        detector_version="test",
    )
    return pr_report_event(report)


def emit_report(session: Session, pr: int, head: str, **counts) -> str:
    return emit(session, EventType.pr_report, report_payload(pr, head, **counts)).id

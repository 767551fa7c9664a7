"""How detections name cases, verdicts and where they were measured, in alert titles and reports."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from tewatch.ingest.plan import UNKNOWN_GPU
from tewatch.store.reads.table_rows import CaseFacts, VerdictFacts
from tewatch.store.schema.models import Case, Machine, Run, Verdict, VerdictStatus


def case_label(case: Case | CaseFacts) -> str:
    params = ", ".join(f"{k}={v}" for k, v in sorted((case.params or {}).items()))
    return f"{case.case_name}({params})"


def verdict_detail(verdict: Verdict | VerdictFacts) -> str:
    if verdict.status == VerdictStatus.fail_accuracy:
        return f"{verdict.check}: {verdict.metric} = {verdict.metric_value} > tolerance {verdict.tolerance}"
    text = (
        f"{verdict.exception_class}: {verdict.message}"
        if verdict.exception_class
        else (verdict.message or "")
    )
    return f"{verdict.check}: {text}".strip(": ")


def measured_on(gpu_model: str, machine: str | None) -> str:
    """Where an alert's title says it was measured: " on <GPU>", the machine's name where the GPU is
    unknown (asv results of CPU benchmarks name none), nothing where neither is known."""
    if gpu_model and gpu_model != UNKNOWN_GPU:
        return f" on {gpu_model}"
    return f" on {machine}" if machine else ""


def machine_of(session: Session, run_id: int) -> str | None:
    return session.scalar(
        select(Machine.name).join(Run, Run.machine_id == Machine.id).where(Run.id == run_id)
    )

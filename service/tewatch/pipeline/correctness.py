"""Correctness flips: a run's new failures (alerts, correctness.failed events), the cases it makes pass
again (their alerts resolved on a branch), and the cases a pull request fixes."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from tewatch.alerts.events import EventType, emit
from tewatch.alerts.lifecycle import change_status, open_alert
from tewatch.core.statuses import FAILING_STATUSES
from tewatch.detect.flips import is_fix, is_new_failure, passes_again, verdicts_before
from tewatch.findings.pr_report import CaseFailure, CaseFixed
from tewatch.pipeline.labels import case_label, measured_on, verdict_detail
from tewatch.pipeline.merge_base import merge_base_runs
from tewatch.pipeline.summary import WRITE_BATCH, DetectSummary
from tewatch.pipeline.training import ALERT_PREFIX as TRAINING_ALERT_PREFIX
from tewatch.store.engine.database import write_session
from tewatch.store.reads.run_reads import run_verdicts, verdicts_in_runs
from tewatch.store.reads.table_rows import CaseFacts, VerdictFacts
from tewatch.store.schema.alert_models import Alert, AlertKind, AlertStatus
from tewatch.store.schema.models import Case, Commit, Run, Verdict, VerdictStatus

FAILING = frozenset(VerdictStatus(s) for s in FAILING_STATUSES)


def previous_verdicts(session: Session, run: Run) -> dict[int, VerdictStatus]:
    """The verdict each case had before this run: the merge base for a pull request, else the latest
    earlier run on the same branch."""
    if run.pr_number is not None:
        base_runs = merge_base_runs(session, run)
        at_base = select(Verdict.case_id, Verdict.status).where(Verdict.run_id.in_([r.id for r in base_runs]))
        return {case_id: status for case_id, status in session.execute(at_base)}  # noqa: C416 - dict() reads a Result, which has keys(), as a mapping
    query = (
        select(Verdict.case_id, Verdict.status, Commit.committed_at)
        .join(Run, Verdict.run_id == Run.id)
        .join(Commit, Run.commit_id == Commit.id)
        .where(
            Run.branch == run.branch,
            Run.pr_number.is_(None),
            Run.id != run.id,
            Verdict.case_id.in_(select(Verdict.case_id).where(Verdict.run_id == run.id)),
        )
        .order_by(Commit.committed_at, Run.started_at, Run.id)
    )
    return verdicts_before(session.execute(query).all(), run.commit.committed_at)


@dataclass(frozen=True)
class _NewFailure:
    row: CaseFailure
    dedupe_key: str
    title: str
    alert_fields: dict
    event: dict  # the correctness.failed payload but its alert id


@dataclass
class CorrectnessChanges:
    """What a run's verdicts change, read from the store: its new failures, and (on a branch) the cases
    that pass again, whose open correctness alerts it resolves."""

    run_id: int
    branch: str | None
    pr_number: int | None
    sha: str
    failures: list[_NewFailure]
    passing_case_ids: list[int]

    @property
    def rows(self) -> list[CaseFailure]:
        return [f.row for f in self.failures]


def correctness_changes(
    session: Session, run: Run, public_url: str, before: dict[int, VerdictStatus] | None = None
) -> CorrectnessChanges:
    """`before`: each case's verdict at the run before (default: read from the store)."""
    before = previous_verdicts(session, run) if before is None else before
    scope = f"pr{run.pr_number}" if run.pr_number is not None else f"branch:{run.branch}"
    failures, passing = [], []
    query = select(Verdict, Case).join(Case, Verdict.case_id == Case.id).where(Verdict.run_id == run.id)
    for verdict, case in session.execute(query).all():
        previous = before.get(case.id)
        if is_new_failure(verdict.status, previous):
            detail = verdict_detail(verdict)
            failures.append(
                _NewFailure(
                    row=CaseFailure(
                        case=case_label(case),
                        previous=previous.value if previous else "",
                        status=verdict.status.value,
                        detail=detail,
                        case_id=case.id,
                    ),
                    dedupe_key=f"correctness:{case.fingerprint}:{scope}:{run.id}",
                    title=f"{case_label(case)}{measured_on(case.gpu_model, run.machine.name)}: {verdict.status.value}",
                    alert_fields={
                        "case_id": case.id,
                        "verdict_id": verdict.id,
                        "run_id": run.id,
                        "branch": run.branch,
                        "pr_number": run.pr_number,
                        "gpu_model": case.gpu_model,
                        "details": {
                            "previous": previous.value if previous else None,
                            "status": verdict.status.value,
                            "detail": detail,
                        },
                    },
                    event={
                        "case": case_label(case),
                        "case_id": case.id,
                        "gpu_model": case.gpu_model,
                        "branch": run.branch,
                        "pr_number": run.pr_number,
                        "commit": run.commit.sha,
                        "previous": previous.value if previous else None,
                        "status": verdict.status.value,
                        "check": verdict.check,
                        "exception_class": verdict.exception_class,
                        "message": verdict.message,
                        "metric": verdict.metric,
                        "value": verdict.metric_value,
                        "tolerance": verdict.tolerance,
                        "links": {"alerts": f"{public_url.rstrip('/')}/alerts"},
                    },
                )
            )
        elif passes_again(verdict.status, on_branch=run.pr_number is None):
            passing.append(case.id)
    return CorrectnessChanges(run.id, run.branch, run.pr_number, run.commit.sha, failures, passing)


def store_correctness(engine: Engine, changes: CorrectnessChanges, summary: DetectSummary) -> None:
    """Open an alert (and queue a correctness.failed event) per new failure and resolve the alerts of
    cases passing again, WRITE_BATCH at a time; alerts are keyed by run, so storing twice adds nothing, and
    a case with a correctness alert still open in the run's scope (its branch, or its pull request) gets no
    second one."""
    for start in range(0, len(changes.failures), WRITE_BATCH):
        with write_session(engine) as session:
            batch = changes.failures[start : start + WRITE_BATCH]
            already_open = _cases_with_open_alerts(
                session, changes, [f.alert_fields["case_id"] for f in batch]
            )
            for failure in batch:
                if failure.alert_fields["case_id"] in already_open:
                    continue
                alert, created = open_alert(
                    session, failure.dedupe_key, AlertKind.correctness, failure.title, **failure.alert_fields
                )
                if created:
                    summary.correctness_alerts += 1
                    emit(session, EventType.correctness_failed, {"alert_id": alert.id, **failure.event})
                    summary.events += 1
    for start in range(0, len(changes.passing_case_ids), WRITE_BATCH):
        with write_session(engine) as session:
            open_ones = session.scalars(
                select(Alert).where(
                    Alert.kind == AlertKind.correctness,
                    ~Alert.dedupe_key.startswith(TRAINING_ALERT_PREFIX),  # a pass says nothing of those
                    Alert.case_id.in_(changes.passing_case_ids[start : start + WRITE_BATCH]),
                    Alert.branch == changes.branch,
                    Alert.pr_number.is_(None),
                    Alert.status.in_([AlertStatus.open, AlertStatus.acknowledged]),
                )
            )
            for alert in open_ones:
                change_status(
                    session,
                    alert,
                    AlertStatus.resolved,
                    "detector",
                    f"passes again in run {changes.run_id} at commit {changes.sha}",
                )
                alert.details = {
                    **(alert.details or {}),
                    "fixed_by_commit": changes.sha,
                    "fixed_by_run": changes.run_id,
                }
                summary.resolved_alerts += 1


def _cases_with_open_alerts(session: Session, changes: CorrectnessChanges, case_ids: list[int]) -> set[int]:
    """Those of the cases whose correctness alert is open or acknowledged in the run's scope: the same pull
    request, else the same branch outside pull requests."""
    scope = (
        Alert.pr_number == changes.pr_number
        if changes.pr_number is not None
        else (Alert.pr_number.is_(None) & (Alert.branch == changes.branch))
    )
    query = select(Alert.case_id).where(
        Alert.kind == AlertKind.correctness,
        Alert.case_id.in_(case_ids),
        Alert.status.in_([AlertStatus.open, AlertStatus.acknowledged]),
        scope,
    )
    return {case_id for case_id in session.scalars(query) if case_id is not None}


@dataclass(frozen=True)
class FixedCase:
    """A case a pull request fixes: failing on the merge base (`base`, the verdict `previous_verdicts` saw
    there), passing in the pull request's run (`verdict`)."""

    case: CaseFacts
    verdict: VerdictFacts
    base: VerdictFacts


def fixed_cases(
    session: Session, run: Run, before: dict[int, VerdictStatus] | None = None
) -> list[FixedCase]:
    """The cases a pull-request run fixes: their verdict on the merge base's runs fails (FAILING) and
    their verdict in this run is `pass`; ordered by case. Empty for a run that is not a pull request's."""
    if run.pr_number is None:
        return []
    before = previous_verdicts(session, run) if before is None else before
    conn = session.connection()
    candidates = {
        found.case.id: found
        for found in run_verdicts(conn, run.id, [VerdictStatus.passed])
        if is_fix(found.verdict.status, before.get(found.case.id))
    }
    if not candidates:
        return []
    base_ids = [r.id for r in merge_base_runs(session, run)]
    base = {  # the failure previous_verdicts saw, the latest run's
        verdict.case_id: verdict
        for verdict in verdicts_in_runs(conn, base_ids, sorted(candidates))
        if verdict.status == before[verdict.case_id]
    }
    fixed = [
        FixedCase(found.case, found.verdict, base[case_id])
        for case_id, found in candidates.items()
        if case_id in base
    ]
    return sorted(fixed, key=lambda f: (case_label(f.case), f.case.gpu_model, f.case.id))


def _base_alerts(session: Session, base_runs: list[Run], case_ids: list[int]) -> dict[int, list[int]]:
    """Correctness alerts still open (or acknowledged) on the merge base's branches, by case."""
    branches = sorted({r.branch for r in base_runs if r.branch})
    out: dict[int, list[int]] = defaultdict(list)
    if not branches or not case_ids:
        return out
    for start in range(0, len(case_ids), 500):
        query = (
            select(Alert.case_id, Alert.id)
            .where(
                Alert.kind == AlertKind.correctness,
                Alert.case_id.in_(case_ids[start : start + 500]),
                Alert.branch.in_(branches),
                Alert.pr_number.is_(None),
                Alert.status.in_([AlertStatus.open, AlertStatus.acknowledged]),
            )
            .order_by(Alert.id)
        )
        for case_id, alert_id in session.execute(query):
            if case_id is not None:
                out[case_id].append(alert_id)
    return out


def fixed_findings(
    session: Session, base_runs: list[Run], fixed: list[FixedCase], public_url: str
) -> list[CaseFixed]:
    """The report's fixed cases: each with what it failed with on the merge base, and the correctness
    alerts still open for it there (merging the fix resolves them)."""
    base_url = public_url.rstrip("/")
    alerts = _base_alerts(session, base_runs, [f.case.id for f in fixed])
    return [
        CaseFixed(
            case=case_label(f.case),
            case_id=f.case.id,
            gpu_model=f.case.gpu_model,
            previous=f.base.status.value,
            previous_detail=verdict_detail(f.base),
            check=f.base.check,
            exception_class=f.base.exception_class,
            message=f.base.message,
            metric=f.base.metric,
            value=f.base.metric_value,
            tolerance=f.base.tolerance,
            base_run_id=f.base.run_id,
            status=f.verdict.status.value,
            open_alert_ids=alerts.get(f.case.id, []),
            links={"case": f"{base_url}/case/{f.case.id}"},
        )
        for f in fixed
    ]

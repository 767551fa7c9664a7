"""A bisection as `tewatch bisect` reports it, stored (again) under its question, and the
`bisection.finished` event the first time it is stored finished."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from tewatch.alerts.events import EventType, emit
from tewatch.alerts.markdown_text import escape_cell
from tewatch.store.reads.bisect_endpoints import Endpoints
from tewatch.store.schema.alert_models import Alert, AlertKind, Detection
from tewatch.store.schema.bisection_models import Bisection, BisectionStep
from tewatch.store.schema.models import Run

GITHUB = "https://github.com"


class UnknownLink(LookupError):
    """The alert or change point a bisection names does not exist."""


@dataclass(frozen=True)
class StepReport:
    position: int
    sha: str
    verdict: str
    subject: str = ""
    evidence: dict[str, Any] = field(default_factory=dict)
    skip_reason: str = ""
    seconds: float = 0.0
    run_id: int | None = None


@dataclass(frozen=True)
class BisectionReport:
    repo: str
    good_sha: str
    bad_sha: str
    judge: str
    selection: str
    status: str
    commits: int
    message: str = ""
    culprit_sha: str | None = None
    culprit_subject: str = ""
    candidates: list[str] = field(default_factory=list)
    endpoints: dict[str, Any] = field(default_factory=dict)
    alert_id: int | None = None
    detection_id: int | None = None
    steps: list[StepReport] = field(default_factory=list)


def commit_url(repo: str, sha: str) -> str:
    return f"{GITHUB}/{repo}/commit/{sha}" if "/" in repo else ""


def store_bisection(session: Session, report: BisectionReport, public_url: str) -> Bisection:
    """Insert, or replace what is stored under the same question; the caller commits."""
    if report.alert_id is not None and session.get(Alert, report.alert_id) is None:
        raise UnknownLink(f"no alert {report.alert_id}")
    if report.detection_id is not None and session.get(Detection, report.detection_id) is None:
        raise UnknownLink(f"no change point {report.detection_id}")
    for step in report.steps:
        if step.run_id is not None and session.get(Run, step.run_id) is None:
            raise UnknownLink(f"no run {step.run_id} (step at {step.sha})")
    found = session.scalars(
        select(Bisection).where(
            Bisection.repo == report.repo,
            Bisection.good_sha == report.good_sha,
            Bisection.bad_sha == report.bad_sha,
            Bisection.judge == report.judge,
            Bisection.selection == report.selection,
        )
    ).one_or_none()
    was_finished = found is not None and found.status == "finished"
    bisection = found or Bisection(
        repo=report.repo,
        good_sha=report.good_sha,
        bad_sha=report.bad_sha,
        judge=report.judge,
        selection=report.selection,
    )
    bisection.status = report.status
    bisection.message = report.message
    bisection.commits = report.commits
    bisection.culprit_sha = report.culprit_sha
    bisection.culprit_subject = report.culprit_subject
    bisection.candidates = list(report.candidates)
    bisection.endpoints = report.endpoints
    bisection.alert_id = report.alert_id if report.alert_id is not None else bisection.alert_id
    bisection.detection_id = (
        report.detection_id if report.detection_id is not None else bisection.detection_id
    )
    bisection.steps = [BisectionStep(**vars(step)) for step in sorted(report.steps, key=lambda s: s.position)]
    session.add(bisection)
    session.flush()
    if report.status == "finished" and not was_finished:
        alert = session.get(Alert, bisection.alert_id) if bisection.alert_id is not None else None
        pr_number = alert.pr_number if alert is not None else None
        emit(session, EventType.bisection_finished, finished_payload(bisection, public_url, pr_number))
    return bisection


def finished_payload(bisection: Bisection, public_url: str, pr_number: int | None) -> dict[str, Any]:
    """`pr_number`: the pull request of the alert the bisection answers, whose GitHub comment gets the line."""
    return {
        "bisection_id": bisection.id,
        "url": f"{public_url.rstrip('/')}/bisections/{bisection.id}",
        "repo": bisection.repo,
        "good": bisection.good_sha,
        "bad": bisection.bad_sha,
        "judge": bisection.judge,
        "selection": bisection.selection,
        "culprit": bisection.culprit_sha,
        "culprit_subject": bisection.culprit_subject,
        "culprit_url": commit_url(bisection.repo, bisection.culprit_sha) if bisection.culprit_sha else "",
        "candidates": bisection.candidates,
        "alert_id": bisection.alert_id,
        "pr_number": pr_number,
        "detection_id": bisection.detection_id,
        "markdown": finished_line(bisection, public_url),
    }


def finished_line(bisection: Bisection, public_url: str) -> str:
    """The line a finished bisection adds to its alert's comment; the commit's subject, text from an upload,
    as inert prose (escaped and defanged)."""
    link = f"{public_url.rstrip('/')}/bisections/{bisection.id}"
    if bisection.culprit_sha:
        sha = bisection.culprit_sha
        return (
            f"Bisection: first bad commit [`{sha[:12]}`]({commit_url(bisection.repo, sha)}) "
            f"{escape_cell(bisection.culprit_subject)} ([steps]({link}))"
        )
    return f"Bisection: the first bad commit is one of {len(bisection.candidates)} commits ([steps]({link}))"


def bisect_command(alert: Alert, endpoints: Endpoints, public_url: str) -> str:
    """The `tewatch bisect` command that answers an alert, for a TE checkout at ./TransformerEngine."""
    judge = "correctness" if alert.kind is AlertKind.correctness else "performance"
    bench = shlex.quote(f"^{re.escape(endpoints.case)}\\.")
    return (
        f"tewatch bisect --repo ./TransformerEngine --good {endpoints.good} --bad {endpoints.bad} "
        f"--bench {bench} --judge {judge} --alert {alert.id} --url {shlex.quote(public_url)}"
    )

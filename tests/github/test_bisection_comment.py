"""A finished bisection's line in the GitHub comment of the pull request whose alert it answered, through
the real outbox and a local GitHub (tests/github/fake_github.py): added beside the reports' sections, kept
as new reports come, its commit subject inert; a bisection of a branch's alert posts nothing."""

from __future__ import annotations

import pytest
from sqlalchemy.orm import Session

from tests.alerts.drain import drain
from tests.github.fake_github import FakeGitHub
from tests.github.reports import emit_report
from tests.github.test_github_outbox import (
    HEAD,
    NEXT_HEAD,
    TOKEN,
    attempts,
    ours,
    settings_for,
    worker_for,
)
from tewatch.alerts.bisections import BisectionReport, store_bisection
from tewatch.github.comment import bisection_lines, sections
from tewatch.store.engine.database import make_engine
from tewatch.store.schema.alert_models import Alert, AlertKind

GOOD, BAD, CULPRIT = "a" * 40, "b" * 40, "c" * 40
HOSTILE_SUBJECT = "Fix @nvidia/te-team regression #12 <b>*now*</b> see https://evil.example"


@pytest.fixture
def engine(db_url):
    engine = make_engine(db_url)
    yield engine
    engine.dispose()


def finish_bisection(engine, pr_number: int | None, selection: str = "quantize.Quantize") -> None:
    with Session(engine) as session, session.begin():
        alert = Alert(
            dedupe_key=f"test:{selection}:{pr_number}",
            kind=AlertKind.regression,
            title="quantize slower",
            pr_number=pr_number,
            branch=None if pr_number is not None else "main",
        )
        session.add(alert)
        session.flush()
        report = BisectionReport(
            repo="acme/TransformerEngine",
            good_sha=GOOD,
            bad_sha=BAD,
            judge="performance",
            selection=selection,
            status="finished",
            commits=9,
            culprit_sha=CULPRIT,
            culprit_subject=HOSTILE_SUBJECT,
            alert_id=alert.id,
        )
        store_bisection(session, report, "http://tewatch.example")


def test_the_culprit_line_joins_the_pull_requests_comment_and_stays(engine, db_url):
    with FakeGitHub(token=TOKEN) as fake:
        worker = worker_for(engine, settings_for(fake, db_url))
        with Session(engine) as session, session.begin():
            emit_report(session, 42, HEAD, regressions=1)
        drain(worker)
        finish_bisection(engine, 42)
        drain(worker)
        [comment] = ours(fake, 42)
        [line] = bisection_lines(comment["body"])
        assert (
            f"first bad commit [`{CULPRIT[:12]}`](https://github.com/acme/TransformerEngine/commit/"
            in line.line
        )
        assert "@\u200bnvidia" in line.line and "#\u200b12" in line.line and "https:\u200b//evil" in line.line
        assert "&lt;b&gt;\\*now\\*&lt;/b&gt;" in line.line and "<b>" not in comment["body"]
        assert [s.gpu_model for s in sections(comment["body"])] == ["NVIDIA H200"]
        with Session(engine) as session, session.begin():
            emit_report(session, 42, NEXT_HEAD)  # a new head's report replaces the section, not the line
        drain(worker)
        [comment] = ours(fake, 42)
        assert NEXT_HEAD[:12] in comment["body"] and bisection_lines(comment["body"]) == [line]
        assert len(fake.requests("POST", r".*/issues/42/comments")) == 1


def test_a_line_for_a_pull_request_without_a_comment_starts_one(engine, db_url):
    with FakeGitHub(token=TOKEN) as fake:
        worker = worker_for(engine, settings_for(fake, db_url))
        finish_bisection(engine, 9)
        drain(worker)
        [comment] = ours(fake, 9)
        assert sections(comment["body"]) == [] and len(bisection_lines(comment["body"])) == 1
        assert fake.commit_statuses(HEAD) == []


def test_a_bisection_of_a_branch_alert_posts_nothing(engine, db_url):
    with FakeGitHub(token=TOKEN) as fake:
        worker = worker_for(engine, settings_for(fake, db_url))
        finish_bisection(engine, None)
        drain(worker)
        [tried] = attempts(engine)
        assert tried.error is None and tried.response_head.startswith("skipped: the bisection answers no")
        assert fake.requests() == []

"""tewatch.github against a local GitHub (tests/github/fake_github.py, which names the REST documentation
pages it follows), through the real outbox: one comment per pull request however many reports arrive,
the head commit's status, retries after a 5xx and a 403 secondary rate limit, App installation tokens,
and answers no retry can fix."""

from __future__ import annotations

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from sqlalchemy import select
from sqlalchemy.orm import Session

from tests.alerts.drain import drain
from tests.github.fake_github import SECONDARY_RATE_LIMIT, FakeGitHub
from tests.github.reports import emit_report, report_payload
from tewatch.alerts.delivery import OutboxWorker
from tewatch.alerts.events import EventType, event_body
from tewatch.core.settings import Settings
from tewatch.github.comment import MARKER, comment_body, sections
from tewatch.github.report import parse_report
from tewatch.store.engine.database import make_engine
from tewatch.store.schema.alert_models import DeliveryStatus, WebhookAttempt, WebhookDelivery
from tewatch.worker.outbox import outbox_worker, sync_github

TOKEN = "ghp_" + "x" * 36
HEAD, NEXT_HEAD = "1" * 40, "2" * 40
FAST = {"webhook_backoff_seconds": 0.05, "webhook_backoff_max_seconds": 0.2, "webhook_timeout_seconds": 5}


@pytest.fixture
def engine(db_url):
    engine = make_engine(db_url)
    yield engine
    engine.dispose()


def settings_for(fake: FakeGitHub, db_url: str, **github) -> Settings:
    github = github or {"github_token": TOKEN}
    return Settings(
        database_url=db_url,
        github_repository=f"{fake.owner}/{fake.repo}",
        github_api_url=fake.url,
        **github,
        **FAST,
    )


def worker_for(engine, settings: Settings) -> OutboxWorker:
    sync_github(engine, settings)
    return outbox_worker(engine, settings)


def attempts(engine) -> list[WebhookAttempt]:
    with Session(engine) as session:
        return list(session.scalars(select(WebhookAttempt).order_by(WebhookAttempt.id)))


def ours(fake: FakeGitHub, pr: int) -> list[dict]:
    return [c for c in fake.issue_comments(pr) if c["body"].startswith(MARKER)]


def test_repeated_reports_keep_one_comment_updated_in_place_and_set_the_status(engine, db_url):
    with FakeGitHub(token=TOKEN) as fake:
        fake.add_comment(42, "LGTM, but please run the NVFP4 suites")
        fake.add_comment(42, f"> {MARKER}\n> quoting the bot")  # a reply quoting it is not ours
        for n in range(99):  # so that the comment is on the second page of 100
            fake.add_comment(42, f"review comment {n}")
        worker = worker_for(engine, settings_for(fake, db_url))
        for failures, regressions in ((2, 1), (0, 3), (0, 0)):
            with Session(engine) as session, session.begin():
                emit_report(session, 42, HEAD, failures=failures, regressions=regressions)
            drain(worker)
            [comment] = ours(fake, 42)
            assert len(fake.issue_comments(42)) == 102
        assert "No correctness failure and no timing change" in comment["body"]
        assert fake.issue_comments(42)[0]["body"] == "LGTM, but please run the NVFP4 suites"
        assert len(fake.requests("POST", r".*/issues/42/comments")) == 1  # created once, then updated
        assert len(fake.requests("PATCH", r".*/issues/comments/\d+")) == 2
        # two pages each time: before and after creating it (another worker may have too), before each update
        assert len(fake.requests("GET", r".*/issues/42/comments")) == 2 * 4
        statuses = fake.commit_statuses(HEAD)
        assert [s["state"] for s in statuses] == ["failure", "failure", "success"]
        assert statuses[0]["description"] == "2 new correctness failures, 1 regression against the merge base"
        assert {s["context"] for s in statuses} == {"tewatch/NVIDIA H200"}
        assert {s["target_url"] for s in statuses} == {"http://tewatch.example/pr/42"}
        every = fake.requests()
        assert all(r.headers["authorization"] == f"token {TOKEN}" for r in every)
        assert all(r.headers["accept"] == "application/vnd.github+json" for r in every)
        assert all(r.headers.get("x-github-api-version") for r in every if r.method != "GET")


def test_two_gpus_share_the_comment_and_a_new_head_replaces_both(engine, db_url):
    with FakeGitHub(token=TOKEN) as fake:
        worker = worker_for(engine, settings_for(fake, db_url))
        with Session(engine) as session, session.begin():
            emit_report(session, 7, HEAD, gpu="NVIDIA H200", regressions=1)
            emit_report(session, 7, HEAD, gpu="NVIDIA B200")
        drain(worker)
        [comment] = ours(fake, 7)
        assert "PR #7 on NVIDIA B200" in comment["body"] and "PR #7 on NVIDIA H200" in comment["body"]
        assert {s["context"]: s["state"] for s in fake.commit_statuses(HEAD)} == {
            "tewatch/NVIDIA H200": "failure",
            "tewatch/NVIDIA B200": "success",
        }
        with Session(engine) as session, session.begin():
            emit_report(session, 7, NEXT_HEAD, gpu="NVIDIA H200")
        drain(worker)
        [comment] = ours(fake, 7)
        assert "PR #7 on NVIDIA H200" in comment["body"] and "B200" not in comment["body"]
        assert NEXT_HEAD[:12] in comment["body"]


def test_a_comment_another_worker_created_at_the_same_time_is_the_one_kept(engine, db_url):
    with FakeGitHub(token=TOKEN) as fake:
        worker = worker_for(engine, settings_for(fake, db_url))
        rival = comment_body(
            None,
            parse_report(
                event_body("rival", EventType.pr_report, report_payload(8, HEAD, gpu="NVIDIA B200"))
            ),
        )

        first = []

        def race(number: int) -> None:
            fake.before_create = None
            first.append(fake.add_comment(number, rival, login="tewatch[bot]"))

        fake.before_create = race
        with Session(engine) as session, session.begin():
            emit_report(session, 8, HEAD, regressions=1)
        drain(worker)
        [kept] = ours(fake, 8)
        assert kept["id"] == first[0]["id"]  # the older of the two
        assert [s.gpu_model for s in sections(kept["body"])] == ["NVIDIA B200", "NVIDIA H200"]
        assert len(fake.requests("DELETE", r".*/issues/comments/\d+")) == 1


def test_a_5xx_and_a_secondary_rate_limit_are_retried_honouring_retry_after(engine, db_url):
    with FakeGitHub(token=TOKEN) as fake:
        worker = worker_for(engine, settings_for(fake, db_url))
        fake.fail_next("POST", r".*/statuses/.*", 502)
        fake.fail_next(
            "GET",
            r".*/issues/9/comments",
            403,
            {
                "message": SECONDARY_RATE_LIMIT,
                "documentation_url": "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api",
            },
            **{"retry-after": "2"},
        )
        with Session(engine) as session, session.begin():
            emit_report(session, 9, HEAD, failures=1)
        drain(worker)
        tried = attempts(engine)
        assert [a.status_code for a in tried] == [403, 502, 201]
        assert tried[0].error.endswith("secondary rate limit, retry after 2 s")
        assert (tried[1].started_at - tried[0].started_at).total_seconds() >= 2.0
        assert tried[1].error.startswith("HTTP 502 from POST /repos/acme/TransformerEngine/statuses/")
        assert tried[2].error is None and "status failure" in tried[2].response_head
        assert len(ours(fake, 9)) == 1  # the second attempt's comment was found again, not duplicated
        assert len(fake.requests("POST", r".*/issues/9/comments")) == 1
        assert [s["state"] for s in fake.commit_statuses(HEAD)] == ["failure"]


def test_a_github_app_authenticates_with_an_installation_token(engine, db_url, tmp_path):
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    public = (
        key.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )
    (tmp_path / "app.pem").write_text(pem)
    with FakeGitHub(app_id="123456", app_public_key=public, installation_id=777) as fake:
        settings = settings_for(
            fake,
            db_url,
            github_app_id="123456",
            github_app_installation_id=777,
            github_app_private_key_file=tmp_path / "app.pem",
        )
        worker = worker_for(engine, settings)
        for n in range(2):
            with Session(engine) as session, session.begin():
                emit_report(session, 11, HEAD, regressions=n)
            drain(worker)
        assert fake.issued_tokens == 1  # kept until it expires
        assert len(ours(fake, 11)) == 1
        [issued] = fake.requests("POST", r"/app/installations/777/access_tokens")
        assert issued.headers["authorization"].startswith("Bearer ey")
        repo_calls = fake.requests(path=r"^/repos/")
        assert repo_calls and all(r.headers["authorization"].startswith("token ghs_") for r in repo_calls)


@pytest.mark.parametrize(
    ("credentials", "repository", "error"),
    [
        ({"github_token": "ghp_revoked"}, "acme/TransformerEngine", "HTTP 401 from GET "),
        (
            {"github_token": TOKEN},
            "acme/elsewhere",
            "HTTP 404 from GET /repos/acme/elsewhere/issues/5/comments",
        ),
    ],
)
def test_answers_no_retry_can_fix_fail_the_delivery_at_once(engine, db_url, credentials, repository, error):
    with FakeGitHub(token=TOKEN) as fake:
        settings = Settings(
            database_url=db_url, github_repository=repository, github_api_url=fake.url, **credentials, **FAST
        )
        worker = worker_for(engine, settings)
        with Session(engine) as session, session.begin():
            emit_report(session, 5, HEAD, repo=repository)
        drain(worker)
        [tried] = attempts(engine)
        assert tried.error.startswith(error)
        with Session(engine) as session:
            assert session.scalar(select(WebhookDelivery.status)) == DeliveryStatus.failed
        assert fake.commit_statuses(HEAD) == []


def test_a_worker_without_github_settings_leaves_github_deliveries_waiting(engine, db_url):
    with FakeGitHub(token=TOKEN) as fake:
        sync_github(engine, settings_for(fake, db_url))
        with Session(engine) as session, session.begin():
            emit_report(session, 3, HEAD)
        plain = outbox_worker(engine, Settings(database_url=db_url, **FAST))
        assert plain.run_once() == (0, 0)
        drain(worker_for(engine, settings_for(fake, db_url)))
        assert len(ours(fake, 3)) == 1


def test_a_report_of_another_repository_is_skipped(engine, db_url):
    with FakeGitHub(token=TOKEN) as fake:
        worker = worker_for(engine, settings_for(fake, db_url))
        with Session(engine) as session, session.begin():
            emit_report(session, 4, HEAD, repo="someone/TransformerEngine")
        drain(worker)
        [tried] = attempts(engine)
        assert tried.error is None and tried.response_head.startswith("skipped: a pull request of someone/")
        assert fake.requests() == []

"""Sends one `pr.report` to GitHub: the pull request's comment created or updated in place, then the head
commit's status; and one `bisection.finished`: its line added to the comment of the pull request whose
alert it answered. Every step is idempotent, so a retry after any failure converges on one comment."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from tewatch.alerts.events import EventType
from tewatch.alerts.outcome import Outcome
from tewatch.core.github_config import GitHubConfig
from tewatch.github.bisection_event import BisectionFinished, parse_bisection
from tewatch.github.client import github_client
from tewatch.github.comment import BisectionLine, comment_body, is_ours, with_bisection
from tewatch.github.errors import outcome_of
from tewatch.github.report import (
    PrReportEvent,
    ReportError,
    commit_state,
    event_type,
    parse_report,
    status_context,
)

if TYPE_CHECKING:
    from githubkit import GitHub


class GitHubPublisher:
    def __init__(self, config: GitHubConfig, timeout_seconds: float = 10.0, client: GitHub | None = None):
        self.config = config
        self.github = client or github_client(config, timeout_seconds)

    def publish(self, body: bytes | str) -> Outcome:
        try:
            if event_type(body) == EventType.bisection_finished.value:
                bisection = parse_bisection(body)
                return self._guarded(lambda: self._publish_bisection(bisection))
            event = parse_report(body)
        except ReportError as exc:
            return Outcome(error=str(exc), final=True)
        return self._guarded(lambda: self._publish(event))

    @staticmethod
    def _guarded(step: Callable[[], Outcome]) -> Outcome:
        try:
            return step()
        except Exception as exc:  # githubkit's errors and anything unforeseen: classified, never raised
            return outcome_of(exc)

    # the steps ------------------------------------------------------------------------------------------
    def _publish(self, event: PrReportEvent) -> Outcome:
        if event.report.repo and event.report.repo.lower() != self.config.repository.lower():
            return Outcome(
                response_head=f"skipped: a pull request of {event.report.repo}, not {self.config.repository}"
            )
        ours = self._our_comments(event.report.pr_number)
        body = comment_body(ours[0].body if ours else None, event)
        if body is None:
            return Outcome(status_code=200, response_head="skipped: the comment holds a newer report")
        if ours:
            comment_id, done = ours[0].id, "unchanged"
            if ours[0].body != body:
                self._update(comment_id, body)
                done = "updated"
            self._delete([c.id for c in ours[1:]])
        else:
            comment_id = self._create(event.report.pr_number, body)
            comment_id = self._one_left(event, comment_id)
            done = "created"
        state, description = commit_state(event)
        answer = self.github.rest.repos.create_commit_status(
            self.config.owner,
            self.config.repo,
            event.report.head_sha,
            state=state,
            target_url=event.report.links.pr,
            description=description,
            context=status_context(self.config.status_context, event),
        )
        return Outcome(
            status_code=answer.status_code,
            response_head=f"comment {comment_id} {done}; status {state} on {event.report.head_sha[:12]}",
        )

    def _publish_bisection(self, bisection: BisectionFinished) -> Outcome:
        if bisection.pr_number is None:
            return Outcome(response_head="skipped: the bisection answers no pull request's alert")
        line = BisectionLine(bisection.bisection_id, bisection.markdown)
        ours = self._our_comments(bisection.pr_number)
        body = with_bisection(ours[0].body if ours else None, line)
        if not ours:
            comment_id = self._create(bisection.pr_number, body)
            ours = self._our_comments(bisection.pr_number)
            if len(ours) <= 1:
                return Outcome(status_code=201, response_head=f"comment {comment_id} created")
            body = with_bisection(ours[0].body, line)  # another worker created one too: keep the oldest
            self._delete([c.id for c in ours[1:]])
        if ours[0].body == body:
            return Outcome(status_code=200, response_head=f"comment {ours[0].id} unchanged")
        self._update(ours[0].id, body)
        return Outcome(status_code=200, response_head=f"comment {ours[0].id} updated")

    def _our_comments(self, pr_number: int) -> list[Any]:
        """The pull request's comments that are ours, oldest first, every page read (the Link header's)."""
        comments: Any = self.github.rest.paginate(
            self.github.rest.issues.list_comments,
            owner=self.config.owner,
            repo=self.config.repo,
            issue_number=pr_number,
            per_page=100,
        )
        return sorted((c for c in comments if is_ours(c.body or None)), key=lambda c: c.id)

    def _create(self, pr_number: int, body: str) -> int:
        return self.github.rest.issues.create_comment(
            self.config.owner, self.config.repo, pr_number, body=body
        ).parsed_data.id

    def _update(self, comment_id: int, body: str) -> None:
        self.github.rest.issues.update_comment(self.config.owner, self.config.repo, comment_id, body=body)

    def _delete(self, comment_ids: list[int]) -> None:
        for comment_id in comment_ids:
            self.github.rest.issues.delete_comment(self.config.owner, self.config.repo, comment_id)

    def _one_left(self, event: PrReportEvent, created_id: int) -> int:
        """Another worker may have created the comment at the same time: keep the oldest, with this report
        merged into it, and delete the rest."""
        ours = self._our_comments(event.report.pr_number)
        if len(ours) <= 1:
            return created_id
        keeper = ours[0]
        if keeper.id != created_id:
            merged = comment_body(keeper.body, event)
            if merged is not None and merged != keeper.body:
                self._update(keeper.id, merged)
        self._delete([c.id for c in ours[1:]])
        return keeper.id

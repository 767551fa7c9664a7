"""Sends one `pr.report` to GitHub: the pull request's comment created or updated in place, then the head
commit's status. Every step is idempotent, so a retry after any failure converges on one comment."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tewatch.alerts.outcome import Outcome
from tewatch.core.github_config import GitHubConfig
from tewatch.github.client import github_client
from tewatch.github.comment import comment_body, is_ours
from tewatch.github.errors import outcome_of
from tewatch.github.report import PrReportEvent, ReportError, commit_state, parse_report, status_context

if TYPE_CHECKING:
    from githubkit import GitHub


class GitHubPublisher:
    def __init__(self, config: GitHubConfig, timeout_seconds: float = 10.0, client: GitHub | None = None):
        self.config = config
        self.github = client or github_client(config, timeout_seconds)

    def publish(self, body: bytes | str) -> Outcome:
        try:
            event = parse_report(body)
        except ReportError as exc:
            return Outcome(error=str(exc), final=True)
        try:
            return self._publish(event)
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

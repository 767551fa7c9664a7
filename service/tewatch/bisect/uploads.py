"""A measured commit uploaded as a run on a branch of its own, through the one API client."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tewatch.bisect import search
from tewatch.bisect.gitrepo import Repository
from tewatch.bisect.search import Verdict
from tewatch.bisect.state import State
from tewatch.client.api import ApiClient, ClientError
from tewatch.client.retries import RetryPolicy
from tewatch.ingest.discover import find_runs


@dataclass
class RunUploader:
    client: ApiClient
    repo: str  # owner/name, as runs name their repository
    branch: str
    policy: RetryPolicy

    def upload(self, results_file: Path, *, detect: bool = True) -> int:
        """The run id of one results file (with its sidecar) uploaded on the branch; ClientError if refused."""
        results_dir = results_file.parent.parent
        found = [run for run in find_runs(results_dir) if run.result == results_file]
        if not found:
            raise ClientError(f"no asv results file {results_file} under {results_dir}")
        fields = {"repo": self.repo, "branch": self.branch}
        sent = self.client.upload(found[0].parts(), fields, self.policy, detect=detect)
        if sent.stored is None:
            raise ClientError(f"upload of {results_file.name} failed: {sent.error}")
        return int(sent.stored["run_id"])


def bisection_branch(good: str, bad: str) -> str:
    return f"bisect-{good[:8]}-{bad[:8]}"


def bisection_body(
    state: State,
    repo: Repository,
    github: str,
    alert: int | None = None,
    change_point: int | None = None,
) -> dict[str, Any]:
    """What POST /api/v1/bisections stores of a bisection as it stands."""
    question = state.question
    position = {sha: i for i, sha in enumerate(state.commits)}
    found = search.finding(state.commits, {s.commit: Verdict(s.verdict) for s in state.steps})
    finished = state.status == "finished" and found is not None
    culprit = found.culprit if finished and found else None
    return {
        "repo": github,
        "good": question.good,
        "bad": question.bad,
        "judge": question.judge,
        "selection": question.bench + (f" {question.value}" if question.value else ""),
        "status": state.status,
        "commits": len(state.commits),
        "message": state.message,
        "culprit": culprit,
        "culprit_subject": repo.subject(culprit)[:500] if culprit else "",
        "candidates": list(found.candidates) if finished and found else [],
        "endpoints": state.endpoints,
        "alert_id": alert,
        "detection_id": change_point,
        "steps": [
            {
                "position": position[step.commit],
                "sha": step.commit,
                "verdict": step.verdict,
                "subject": repo.subject(step.commit)[:500],
                "evidence": step.evidence,
                "skip_reason": step.skip_reason[:5000],
                "seconds": step.seconds,
                "run_id": step.run_id,
            }
            for step in state.steps
        ],
    }

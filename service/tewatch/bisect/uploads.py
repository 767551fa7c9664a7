"""A measured commit uploaded as a run on a branch of its own, through the one API client."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

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

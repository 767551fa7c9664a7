"""A stretch of history measured after the fact: every `stride`-th commit of a first-parent range (the
last one always), each in its commit's environment, uploaded oldest first on a branch, so detection
runs on it as on any branch's uploads."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from tewatch.bisect.environments import EnvironmentMaker
from tewatch.bisect.suite_runs import SuiteRun
from tewatch.bisect.uploads import RunUploader


def chosen(commits: list[str], stride: int) -> list[str]:
    """Every `stride`-th commit from the first, and the last."""
    if stride < 1:
        raise ValueError(f"--stride must be 1 or more, not {stride}")
    picked = commits[::stride]
    return picked if picked[-1] == commits[-1] else [*picked, commits[-1]]


@dataclass(frozen=True)
class Backfilled:
    commit: str
    run_id: int | None  # None: skipped
    skip_reason: str = ""


@dataclass
class Backfill:
    maker: EnvironmentMaker
    suite: SuiteRun
    work: Path
    uploader: RunUploader
    say: Callable[[str], None] = lambda text: None

    def run(self, commits: list[str]) -> Iterator[Backfilled]:
        for commit in commits:
            env = self.maker.make(commit)
            if not env.usable:
                yield Backfilled(commit, None, env.skip_reason)
                continue
            results = self.suite.once(env, self.work / commit)
            yield Backfilled(commit, self.uploader.upload(results))

"""A bisection from its question to its finding: checked before anything is built (commits known, good
an ancestor of bad, a selection that names benchmarks), endpoints measured and judged first, then the
halving, each step measured in its commit's environment, judged, uploaded and written to the state file;
it stops at the finding, or before a step the time left cannot hold."""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tewatch.bisect import measurements, search
from tewatch.bisect.environments import Environment, EnvironmentMaker
from tewatch.bisect.gitrepo import GitError, Repository
from tewatch.bisect.judges import Cases, CorrectnessJudge, NoDifference, PerformanceJudge, ValueJudge
from tewatch.bisect.search import Verdict
from tewatch.bisect.state import Question, State, Step, load
from tewatch.bisect.suite_runs import SelectionError, SuiteRun

Judge = CorrectnessJudge | PerformanceJudge | ValueJudge
Upload = Callable[[State, Step, Path], int | None]


class BisectError(Exception):
    """Why a bisection cannot start or go on: one line."""


def ask(
    repo: Repository, good: str, bad: str, judge: str, suite: SuiteRun, base_python: str, value: str = ""
) -> tuple[Question, list[str]]:
    """The question with both endpoints as full hashes, and the first-parent commits from good to bad;
    BisectError before anything is built when it cannot be answered."""
    try:
        good_sha, bad_sha = repo.resolve(good), repo.resolve(bad)
    except GitError as exc:
        raise BisectError(str(exc)) from exc
    if good_sha == bad_sha:
        raise BisectError(f"--good and --bad are the same commit {good_sha[:12]}")
    if not repo.is_ancestor(good_sha, bad_sha):
        raise BisectError(
            f"the good commit {good_sha[:12]} is not an ancestor of the bad commit {bad_sha[:12]}"
        )
    if judge == "value" and not value:
        raise BisectError("--judge value needs --value NAME (a metric or a timed method)")
    try:
        suite.selected(base_python)
    except SelectionError as exc:
        raise BisectError(str(exc)) from exc
    question = Question(str(repo.path), good_sha, bad_sha, judge, suite.bench, value)
    return question, repo.line(good_sha, bad_sha)


def make_judge(question: Question) -> Judge:
    if question.judge == "correctness":
        return CorrectnessJudge()
    if question.judge == "performance":
        return PerformanceJudge()
    return ValueJudge(question.value)


@dataclass
class Bisector:
    state: State
    state_path: Path
    maker: EnvironmentMaker
    suite: SuiteRun
    work: Path  # the steps' results folders
    budget_s: float | None = None  # measuring time, over every invocation
    upload: Upload | None = None
    saved: Callable[[State], None] | None = None  # told the state after every write (the service)
    say: Callable[[str], None] = lambda text: None

    def __post_init__(self) -> None:
        self.judge = make_judge(self.state.question)

    @classmethod
    def open(cls, question: Question, commits: list[str], state_path: Path, **kwargs: Any) -> Bisector:
        state = load(state_path, question) or State(question, commits)
        return cls(state, state_path, **kwargs)

    @property
    def verdicts(self) -> dict[str, Verdict]:
        return {s.commit: Verdict(s.verdict) for s in self.state.steps}

    def finding(self) -> search.Finding | None:
        return search.finding(self.state.commits, self.verdicts) if self.state.status == "finished" else None

    def run(self) -> State:
        """Measures what is left; endpoints found not to differ are judged again from their kept
        measurements (a judge may have changed), nothing measured twice."""
        if self.state.status == "finished":
            return self.state
        self.state.status = "running"
        if not self._endpoints():
            return self.state
        while (commit := search.next_commit(self.state.commits, self.verdicts)) is not None:
            if self._out_of_time():
                return self.state
            self._step(commit)
        self.state.status = "finished"
        self._save()
        return self.state

    # the steps ------------------------------------------------------------------------------------------

    def _save(self) -> None:
        self.state.save(self.state_path)
        if self.saved is not None:
            self.saved(self.state)

    def _out_of_time(self) -> bool:
        if self.budget_s is None:
            return False
        longest = max((s.seconds for s in self.state.steps), default=0.0)
        if self.state.spent_s + longest <= self.budget_s:
            return False
        self.state.status = "out_of_time"
        self.state.message = (
            f"stopped: {self.state.spent_s:.0f} s spent of {self.budget_s:.0f} s, and a step takes up to "
            f"{longest:.0f} s; run again with more time to resume"
        )
        self._save()
        return True

    def _environment(self, commit: str) -> Environment:
        if self.maker.cached(commit) is None:
            self.say(f"making the environment of {commit[:12]}")
        return self.maker.make(commit)

    def _endpoint_environment(self, commit: str, which: str) -> Environment:
        env = self._environment(commit)
        if not env.usable:
            raise BisectError(
                f"the {which} commit {commit[:12]} has no usable environment: {env.skip_reason}"
            )
        return env

    def _measure(self, commit: str) -> list[Path]:
        """The commit's results files: its own run, or (performance) the good endpoint's and its rounds."""
        folder = self.work / commit
        shutil.rmtree(folder, ignore_errors=True)  # what an interrupted step left
        env = self._environment(commit)
        self.say(f"measuring {commit[:12]}")
        if isinstance(self.judge, PerformanceJudge):
            good = self._endpoint_environment(self.state.question.good, "good")
            return list(self.suite.ab(good, env, folder))
        return [self.suite.once(env, folder)]

    def _cases(self, step: Step) -> Cases:
        return measurements.read(Path(step.results[-1]))

    def _endpoints(self) -> bool:
        question = self.state.question
        for commit, verdict in ((question.good, Verdict.good), (question.bad, Verdict.bad)):
            if self.state.step(commit) is not None or (
                verdict is Verdict.good and isinstance(self.judge, PerformanceJudge)
            ):
                continue
            started = time.monotonic()
            self._endpoint_environment(commit, verdict.value)
            step = Step(commit, verdict.value, results=[str(p) for p in self._measure(commit)])
            self._record(step, started)
        bad = self.state.step(question.bad)
        assert bad is not None
        try:
            if isinstance(self.judge, PerformanceJudge):
                base, head = (measurements.read(Path(p)) for p in bad.results)
                self.state.endpoints = self.judge.endpoints(base, head)
            else:
                good = self.state.step(question.good)
                assert good is not None
                self.state.endpoints = self.judge.endpoints(self._cases(good), self._cases(bad))
        except NoDifference as exc:
            self.state.status, self.state.message = "no_difference", str(exc)
            self._save()
            return False
        self._save()
        return True

    def _step(self, commit: str) -> None:
        started = time.monotonic()
        env = self._environment(commit)
        if not env.usable:
            self._record(Step(commit, Verdict.skip.value, skip_reason=env.skip_reason), started)
            return
        files = self._measure(commit)
        if isinstance(self.judge, PerformanceJudge):
            base, head = (measurements.read(p) for p in files)
            judged = self.judge.judge(base, head)
        else:
            judged = self.judge.judge(measurements.read(files[-1]))
        step = Step(commit, judged.verdict.value, judged.evidence, results=[str(p) for p in files])
        self._record(step, started)
        self.say(f"{commit[:12]} is {judged.verdict.value}")

    def _record(self, step: Step, started: float) -> None:
        step.seconds = time.monotonic() - started
        self.state.spent_s += step.seconds
        if self.upload is not None and step.results:
            step.run_id = self.upload(self.state, step, Path(step.results[-1]))
        self.state.put(step)
        self._save()

"""One campaign: base and perturbed head measured in A/B rounds on one runner (optionally an A/A arm of
the base's own code beside them), the head uploaded as a pull request, detection, webhooks, pages."""

from __future__ import annotations

import hashlib
import json
import secrets
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from tewatch.campaign.receiver import WebhookReceiver
from tewatch.campaign.scoring import pr_case_verdicts, score, touched_cases
from tewatch.campaign.service_process import ServiceProcess
from tewatch.client.api import ApiClient
from tewatch.runner.rounds import run_ab
from tewatch.runner.suite import RunOptions, RunOutcome, run_suite
from tewatch.store.engine.database import make_engine
from tewatch.store.engine.migrate import upgrade
from tewatch.store.schema.models import TokenScope
from tewatch.store.writes.tokens import create_token

PAGES = {"overview": "/", "matrix": "/matrix", "alerts": "/alerts", "runs": "/runs", "machines": "/machines"}
EVENTS = ["regression.detected", "correctness.failed", "pr.report"]
PR_REPORT_WAIT_S = 180.0

T = TypeVar("T")


@dataclass
class CampaignOptions:
    project: Path
    out: Path
    profile: str = "quick"
    backends: tuple[str, ...] | None = None
    bench: str | None = None
    perturb: str = ""
    pr_number: int = 1
    branch: str = "main"
    base_results: Path | None = None
    base_commit: str | None = None
    head_results: Path | None = None
    database_url: str | None = None
    rounds: int = 3  # A/B rounds per side; 1: one run per side, one after the other
    aa: bool = False  # also an A/A arm (the base's code again), uploaded as pull request pr_number + 1
    aa_results: Path | None = None  # a kept A/A arm uploaded as pr_number + 1 (with base_results)
    deadline_s: float | None = None  # no A/B round starts that would end past this many seconds


@dataclass
class CampaignSummary:
    base_commit: str = ""
    head_commit: str = ""
    perturb: str = ""
    verdicts: dict[str, dict[str, int]] = field(default_factory=dict)
    alerts: list[dict] = field(default_factory=list)
    pr_verdicts: dict[str, int] = field(default_factory=dict)
    webhooks: dict[str, int] = field(default_factory=dict)
    signatures_valid: bool = True
    pages: list[str] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)
    rounds: int = 1
    round_seconds: list[dict[str, float]] = field(default_factory=list)
    aa_pr_verdicts: dict[str, int] = field(default_factory=dict)
    # the head's cases against the perturbations they ran, the A/A arm's the same way, and its flagged cases
    perturbations: dict = field(default_factory=dict)
    aa_perturbations: dict = field(default_factory=dict)
    aa_flagged: list[str] = field(default_factory=list)


def head_commit_for(base: str, perturb: str) -> str:
    """A stable commit id for the perturbed state of `base`."""
    return hashlib.sha1(f"{base}+{perturb}".encode()).hexdigest()


def tewatch_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tewatch", *args], capture_output=True, text=True)


class Campaign:
    def __init__(self, opts: CampaignOptions, say: Callable[[str], None]) -> None:
        if opts.aa_results is not None and (opts.aa or opts.base_results is None):
            raise RuntimeError(
                "--aa-results uploads an A/A arm kept beside its base: it needs --base-results, and "
                "replaces --aa (which measures one)"
            )
        self.opts = opts
        self.say = say
        self.summary = CampaignSummary(perturb=opts.perturb)
        opts.out.mkdir(parents=True, exist_ok=True)
        self.database_url = opts.database_url or f"sqlite:///{(opts.out / 'campaign.sqlite3').resolve()}"
        self.arm_commits: dict[str, str] = {}  # commit -> arm, for the arms filed under commits of their own

    def _timed(self, name: str, step: Callable[[], T]) -> T:
        started = time.monotonic()
        self.say(f"{name} ...")
        value = step()
        self.summary.seconds[name] = round(time.monotonic() - started, 1)
        self.say(f"{name}: {self.summary.seconds[name]:.1f} s")
        return value

    def run(self) -> CampaignSummary:
        started = time.monotonic()
        upgrade(self.database_url)
        engine = make_engine(self.database_url)
        token = create_token(engine, "campaign", TokenScope.admin)  # it subscribes its receiver
        engine.dispose()
        secret = secrets.token_hex(16)
        with (
            # its receiver listens on 127.0.0.1, where webhooks go only where the service allows it
            ServiceProcess(
                self.database_url, self.opts.out / "service.log", {"TEWATCH_WEBHOOK_ALLOW_LOOPBACK": "true"}
            ) as service,
            WebhookReceiver(secret, self.opts.out / "webhooks") as receiver,
            ExitStack() as stack,
        ):
            client = stack.enter_context(ApiClient(service.url, token, timeout=120))
            client.add_webhook(receiver.url, secret, EVENTS, "campaign receiver")
            measured = self._measure_rounds() if self._rounds_wanted() else {}
            base = self._base(service.url, token, measured.get("base"))
            head = self._head(service.url, token, base, measured.get("head"))
            head_results = self.opts.head_results or measured.get("head") or self.opts.out / "head-results"
            aa_results = self.opts.aa_results or measured.get("aa")
            if aa_results is not None:
                aa = self._upload_pr(service.url, token, aa_results, self.opts.pr_number + 1, base, "A/A arm")
                self.arm_commits[aa] = "aa"
            self._timed(
                "detect on the branch",
                lambda: self._cli("detect", "--branch", self.opts.branch, "--db", self.database_url),
            )
            self._timed(
                "wait for pr.report", lambda: self._wait_for_report(receiver, 1 + (aa_results is not None))
            )
            self._collect(client, receiver, base, head, aa_results is not None)
            self._score(head_results, aa_results)
            self._timed("render pages", lambda: self._render_pages(client))
        self.summary.seconds["total"] = round(time.monotonic() - started, 1)
        (self.opts.out / "summary.json").write_text(json.dumps(self.summary.__dict__, indent=1, default=str))
        return self.summary

    def _suite(self, results_dir: Path, commit: str | None, extra_env: dict[str, str]) -> RunOutcome:
        return run_suite(
            RunOptions(
                project=self.opts.project,
                profile=self.opts.profile,
                backends=self.opts.backends,
                bench=self.opts.bench,
                results_dir=results_dir,
                commit=commit,
                extra_env=extra_env,
            ),
            lambda percent, what: None,
        )

    def _cli(self, *args: str) -> str:
        done = tewatch_cli(*args)
        if done.returncode != 0:
            raise RuntimeError(f"tewatch {args[0]} failed: {(done.stderr or done.stdout).strip()[-2000:]}")
        return done.stdout

    def _rounds_wanted(self) -> bool:
        return self.opts.rounds > 1 and self.opts.base_results is None and self.opts.head_results is None

    def _measure_rounds(self) -> dict[str, Path]:
        """Base, head (and the A/A arm) in interleaved rounds; side name -> its results folder."""
        perturbed = {"TEWATCH_PERTURB": self.opts.perturb} if self.opts.perturb else {}
        arms = [("base", {}, ""), ("head", perturbed, self.opts.perturb)]
        if self.opts.aa:
            arms.append(("aa", {}, "aa"))
        # every arm runs under the base's commit (TE's, or --base-commit); the heads are filed apart below
        sides = [
            (
                name,
                RunOptions(
                    project=self.opts.project,
                    profile=self.opts.profile,
                    backends=self.opts.backends,
                    bench=self.opts.bench,
                    results_dir=self.opts.out / f"{name}-results",
                    commit=self.opts.base_commit,
                    extra_env=env,
                ),
            )
            for name, env, _ in arms
        ]
        outcome = self._timed(
            f"A/B rounds ({', '.join(n for n, _, _ in arms)})",
            lambda: run_ab(sides, self.opts.rounds, self.opts.deadline_s, self.say),
        )
        self.summary.rounds = outcome.rounds
        self.summary.round_seconds = outcome.round_seconds
        folders = {}
        for name, _, change in arms:
            folder = self.opts.out / f"{name}-results"
            if name != "base":  # file the arms under commits of their own: the base's, changed
                commit = head_commit_for(outcome.sides["base"].commit, change)
                _refile_all(folder, commit)
                self.arm_commits[commit] = name
            folders[name] = folder
        return folders

    def _base(self, url: str, token: str, measured: Path | None = None) -> str:
        results = self.opts.base_results or measured
        if results is None:
            results = self.opts.out / "base-results"
            outcome = self._timed("base run", lambda: self._suite(results, self.opts.base_commit, {}))
            commit = outcome.commit
        else:
            commit = single_commit(results)
        self._timed(
            "upload base",
            lambda: self._cli(
                "upload", str(results), "--url", url, "--token", token, "--branch", self.opts.branch
            ),
        )
        self.summary.base_commit = commit
        return commit

    def _head(self, url: str, token: str, base: str, measured: Path | None = None) -> str:
        results = self.opts.head_results or measured
        if results is None:
            results = self.opts.out / "head-results"
            commit = head_commit_for(base, self.opts.perturb)
            env = {"TEWATCH_PERTURB": self.opts.perturb} if self.opts.perturb else {}
            self._timed("head run (perturbed)", lambda: self._suite(results, commit, env))
        commit = self._upload_pr(url, token, results, self.opts.pr_number, base, "head")
        self.summary.head_commit = commit
        return commit

    def _upload_pr(self, url: str, token: str, results: Path, pr: int, base: str, what: str) -> str:
        self._timed(
            f"upload {what} as pull request {pr}",
            lambda: self._cli(
                "upload",
                str(results),
                "--url",
                url,
                "--token",
                token,
                "--branch",
                f"pr-{pr}",
                "--pr",
                str(pr),
                "--base",
                base,
            ),
        )
        return single_commit(results)

    def _wait_for_report(self, receiver: WebhookReceiver, reports: int) -> None:
        deadline = time.monotonic() + PR_REPORT_WAIT_S
        while time.monotonic() < deadline:
            if len(receiver.events("pr.report")) >= reports:
                return
            time.sleep(0.5)
        raise RuntimeError(f"no pr.report webhook arrived within {PR_REPORT_WAIT_S:.0f} s")

    def _collect(
        self, client: ApiClient, receiver: WebhookReceiver, base: str, head: str, aa_arm: bool
    ) -> None:
        for run in client.runs({}):
            commit = run["commit_sha"]
            label = (
                "head"
                if commit == head
                else "base"
                if commit == base
                else self.arm_commits.get(commit, commit[:12])
            )
            counts = Counter(self.summary.verdicts.get(label, {}))
            counts.update(run["summary"].get("verdicts", {}))
            self.summary.verdicts[label] = dict(counts)
        self.summary.alerts = list(client.alerts({}))
        comparisons = client.pr_comparisons(self.opts.pr_number)
        self.summary.pr_verdicts = dict(Counter(c["verdict"] for c in comparisons))
        if aa_arm:
            aa = client.pr_comparisons(self.opts.pr_number + 1)
            self.summary.aa_pr_verdicts = dict(Counter(c["verdict"] for c in aa))
        self.summary.webhooks = dict(Counter(d["event"] for d in receiver.deliveries))
        self.summary.signatures_valid = all(d["signature_valid"] for d in receiver.deliveries)
        for event in receiver.events("pr.report"):
            number = event["body"]["data"]["pr_number"]
            name = "pr-report.md" if number == self.opts.pr_number else f"pr-report-{number}.md"
            (self.opts.out / name).write_text(event["body"]["data"]["markdown"])

    def _score(self, head_results: Path, aa_results: Path | None) -> None:
        engine = make_engine(self.database_url)
        try:
            outcome = score(touched_cases(head_results), pr_case_verdicts(engine, self.opts.pr_number))
            self.summary.perturbations = outcome.__dict__
            if aa_results is not None:
                aa = score(touched_cases(aa_results), pr_case_verdicts(engine, self.opts.pr_number + 1))
                self.summary.aa_perturbations = aa.__dict__
                self.summary.aa_flagged = aa.flagged_untouched
        finally:
            engine.dispose()

    def _render_pages(self, client: ApiClient) -> None:
        folder = self.opts.out / "pages"
        folder.mkdir(exist_ok=True)
        pages = dict(PAGES, pull_request=f"/pr/{self.opts.pr_number}")
        for name, path in pages.items():
            (folder / f"{name}.html").write_text(client.page(path))
            self.summary.pages.append(name)


def _refile_all(results_dir: Path, commit: str) -> None:
    from tewatch.runner import results

    for machine_dir in results_dir.iterdir():
        if machine_dir.is_dir() and not machine_dir.name.startswith("."):
            for path in list(machine_dir.glob("*.json")):
                if path.name != "machine.json":
                    results.refile(path, commit)


def single_commit(results: Path) -> str:
    """The commit of the one run an asv results folder holds."""
    # asv's layout: <results>/<machine>/<commit>-<env>.json beside machine.json
    commits = {
        json.loads(p.read_text(errors="replace").replace("NaN", "null"))["commit_hash"]
        for p in results.glob("*/*.json")
        if p.name != "machine.json" and not p.parent.name.startswith(".")
    }
    if len(commits) != 1:
        raise RuntimeError(f"{results} must hold the results of exactly one commit, found {len(commits)}")
    return commits.pop()

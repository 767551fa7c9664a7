"""One campaign: base run, perturbed head run as a pull request, uploads, detection, webhooks, pages."""

from __future__ import annotations

import hashlib
import json
import secrets
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from tewatch.campaign.receiver import WebhookReceiver
from tewatch.campaign.service_process import ServiceProcess
from tewatch.runner.suite import RunOptions, RunOutcome, run_suite
from tewatch.store.database import make_engine
from tewatch.store.migrate import upgrade
from tewatch.store.tokens import create_token

PAGES = {"overview": "/", "matrix": "/matrix", "alerts": "/alerts", "runs": "/runs", "machines": "/machines"}
EVENTS = ["regression.detected", "correctness.failed", "pr.report"]
PR_REPORT_WAIT_S = 180.0


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


def head_commit_for(base: str, perturb: str) -> str:
    """A stable commit id for the perturbed state of `base`."""
    return hashlib.sha1(f"{base}+{perturb}".encode()).hexdigest()


def tewatch_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tewatch", *args], capture_output=True, text=True)


class Campaign:
    def __init__(self, opts: CampaignOptions, say: Callable[[str], None]) -> None:
        self.opts = opts
        self.say = say
        self.summary = CampaignSummary(perturb=opts.perturb)
        opts.out.mkdir(parents=True, exist_ok=True)
        self.database_url = opts.database_url or f"sqlite:///{(opts.out / 'campaign.sqlite3').resolve()}"

    def _timed(self, name: str, step: Callable[[], object]) -> object:
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
        token = create_token(engine, name="campaign")
        engine.dispose()
        secret = secrets.token_hex(16)
        with ServiceProcess(self.database_url, self.opts.out / "service.log") as service, \
                WebhookReceiver(secret, self.opts.out / "webhooks") as receiver:
            client = httpx.Client(base_url=service.url, headers={"Authorization": f"Bearer {token}"}, timeout=120)
            client.post("/api/v1/webhooks", json={"url": receiver.url, "secret": secret, "event_types": EVENTS,
                                                  "description": "campaign receiver"}).raise_for_status()
            base = self._base(service.url, token)
            head = self._head(service.url, token, base)
            self._timed("detect on the branch", lambda: self._cli("detect", "--branch", self.opts.branch,
                                                                   "--db", self.database_url))
            self._timed("wait for pr.report", lambda: self._wait_for_report(receiver))
            self._collect(client, receiver, base, head)
            self._timed("render pages", lambda: self._render_pages(client))
        self.summary.seconds["total"] = round(time.monotonic() - started, 1)
        (self.opts.out / "summary.json").write_text(json.dumps(self.summary.__dict__, indent=1, default=str))
        return self.summary

    def _suite(self, results_dir: Path, commit: str | None, extra_env: dict[str, str]) -> RunOutcome:
        return run_suite(RunOptions(project=self.opts.project, profile=self.opts.profile,
                                    backends=self.opts.backends, bench=self.opts.bench, results_dir=results_dir,
                                    commit=commit, extra_env=extra_env),
                         lambda percent, what: None)

    def _cli(self, *args: str) -> str:
        done = tewatch_cli(*args)
        if done.returncode != 0:
            raise RuntimeError(f"tewatch {args[0]} failed: {(done.stderr or done.stdout).strip()[-2000:]}")
        return done.stdout

    def _base(self, url: str, token: str) -> str:
        results = self.opts.base_results
        if results is None:
            results = self.opts.out / "base-results"
            outcome = self._timed("base run", lambda: self._suite(results, self.opts.base_commit, {}))
            commit = outcome.commit
        else:
            commit = self._single_commit(results)
        self._timed("upload base", lambda: self._cli("upload", str(results), "--url", url, "--token", token,
                                                      "--branch", self.opts.branch))
        self.summary.base_commit = commit
        return commit

    def _head(self, url: str, token: str, base: str) -> str:
        results = self.opts.head_results
        if results is None:
            results = self.opts.out / "head-results"
            commit = head_commit_for(base, self.opts.perturb)
            env = {"TEWATCH_PERTURB": self.opts.perturb} if self.opts.perturb else {}
            self._timed("head run (perturbed)", lambda: self._suite(results, commit, env))
        else:
            commit = self._single_commit(results)
        self._timed("upload head as a pull request",
                    lambda: self._cli("upload", str(results), "--url", url, "--token", token,
                                      "--branch", f"pr-{self.opts.pr_number}", "--pr", str(self.opts.pr_number),
                                      "--base", base))
        self.summary.head_commit = commit
        return commit

    @staticmethod
    def _single_commit(results: Path) -> str:
        # asv's layout: <results>/<machine>/<commit>-<env>.json beside machine.json
        commits = {json.loads(p.read_text(errors="replace").replace("NaN", "null"))["commit_hash"]
                   for p in results.glob("*/*.json")
                   if p.name != "machine.json" and not p.parent.name.startswith(".")}
        if len(commits) != 1:
            raise RuntimeError(f"{results} must hold the results of exactly one commit, found {len(commits)}")
        return commits.pop()

    def _wait_for_report(self, receiver: WebhookReceiver) -> None:
        deadline = time.monotonic() + PR_REPORT_WAIT_S
        while time.monotonic() < deadline:
            if receiver.events("pr.report"):
                return
            time.sleep(0.5)
        raise RuntimeError(f"no pr.report webhook arrived within {PR_REPORT_WAIT_S:.0f} s")

    def _collect(self, client: httpx.Client, receiver: WebhookReceiver, base: str, head: str) -> None:
        runs = client.get("/api/v1/runs", params={"limit": 100}).raise_for_status().json()
        for run in runs["items"]:
            commit = run["commit_sha"]
            label = "head" if commit == head else "base" if commit == base else commit[:12]
            counts = Counter(self.summary.verdicts.get(label, {}))
            counts.update(run["summary"].get("verdicts", {}))
            self.summary.verdicts[label] = dict(counts)
        self.summary.alerts = client.get("/api/v1/alerts", params={"limit": 500}).raise_for_status().json()
        comparisons = client.get(f"/api/v1/prs/{self.opts.pr_number}/comparisons").raise_for_status().json()
        self.summary.pr_verdicts = dict(Counter(c["verdict"] for c in comparisons))
        self.summary.webhooks = dict(Counter(d["event"] for d in receiver.deliveries))
        self.summary.signatures_valid = all(d["signature_valid"] for d in receiver.deliveries)
        report = receiver.events("pr.report")[-1]["body"]
        (self.opts.out / "pr-report.md").write_text(report["data"]["markdown"])

    def _render_pages(self, client: httpx.Client) -> None:
        folder = self.opts.out / "pages"
        folder.mkdir(exist_ok=True)
        pages = dict(PAGES, pull_request=f"/pr/{self.opts.pr_number}")
        for name, path in pages.items():
            answer = client.get(path)
            answer.raise_for_status()
            (folder / f"{name}.html").write_text(answer.text)
            self.summary.pages.append(name)

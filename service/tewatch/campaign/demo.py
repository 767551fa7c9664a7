"""`tewatch demo`: TE's releases run on one H200, oldest first, under their commits and dates, the 2-GPU
runs and one fresh CPU run of the suites, in one store, each run followed by the detection an upload gets
(correctness and change-point alerts open as a real upload stream opens them), and the kept H200 A/B
campaign as pull request 1."""

from __future__ import annotations

import subprocess
import tempfile
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from tewatch.campaign.pipeline import single_commit
from tewatch.campaign.release_history import release_runs
from tewatch.campaign.release_steps import release_summaries
from tewatch.ingest.bundle import UploadBundle
from tewatch.ingest.discover import RunFiles, find_runs
from tewatch.ingest.service import ingest_bundle
from tewatch.pipeline.detection import detect_after_upload
from tewatch.runner.suite import RunOptions, run_suite
from tewatch.store.engine.database import make_engine
from tewatch.store.engine.migrate import upgrade

# the quick profile on TE 2.18.0, 2.19.0 and 2.20.2 on one H200, and 2.20.2's other checks (its README)
RELEASE_HISTORY = Path("tests") / "fixtures" / "h200-releases"
# the distributed suite on two H200s with TE 2.20.2 (each folder's README says how they were made)
DISTRIBUTED_HISTORY = tuple(
    Path("tests") / "fixtures" / name for name in ("h200x2-distributed", "h200x2-distributed-compiled")
)
# base and head (four sized slowdowns) in A/B rounds on one H200: the head is pull request 1
CAMPAIGN = Path("tests") / "fixtures" / "h200-ab-rounds"
# TE's runs are filed under TE's repository, the project's own CPU runs (torch-ref) under its own
TE_REPO = "NVIDIA/TransformerEngine"
PROJECT_REPO = "tewatch"
DEMO_PR = 1


def bundle_of(
    run: RunFiles,
    branch: str,
    pr_number: int | None = None,
    merge_base: str | None = None,
    repo: str = "",
    commit_date: datetime | None = None,
) -> UploadBundle:
    read = lambda path: path.read_bytes() if path else None  # noqa: E731
    return UploadBundle(
        result=run.result.read_bytes(),
        machine=run.machine.read_bytes(),
        benchmarks=run.benchmarks.read_bytes(),
        run=read(run.run),
        asv_stderr=read(run.asv_stderr),
        cases=[(path.name, path.read_bytes()) for path in run.cases],
        branch=branch,
        pr_number=pr_number,
        merge_base_sha=merge_base,
        repo=repo,
        commit_date=commit_date,
    )


def load_results(
    database_url: str,
    results_dir: Path,
    branch: str,
    public_url: str = "",
    pr_number: int | None = None,
    merge_base: str | None = None,
    repo: str = TE_REPO,
    commit_date: datetime | None = None,
) -> list[tuple[int, bool]]:
    """Ingest every run under an asv results folder, each new one followed by the detection an upload gets;
    (run id, newly stored) for each."""
    return load_runs(
        database_url, find_runs(results_dir), branch, public_url, pr_number, merge_base, repo, commit_date
    )


def load_runs(
    database_url: str,
    runs: list[RunFiles],
    branch: str,
    public_url: str = "",
    pr_number: int | None = None,
    merge_base: str | None = None,
    repo: str = TE_REPO,
    commit_date: datetime | None = None,
) -> list[tuple[int, bool]]:
    engine = make_engine(database_url)
    try:
        stored = []
        for run in runs:
            outcome = ingest_bundle(engine, bundle_of(run, branch, pr_number, merge_base, repo, commit_date))
            if outcome.created:
                detect_after_upload(engine, outcome.run_id, public_url)
            stored.append((outcome.run_id, outcome.created))
        return stored
    finally:
        engine.dispose()


def project_head(project: Path) -> str:
    """torch-ref is the project's own code: its CPU runs are filed under the project's commit."""
    done = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=project, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise FileNotFoundError(f"{project} is not a git checkout: {done.stderr.strip()}")
    return done.stdout.strip()


def progress_every(step: float, say: Callable[[str], None]) -> Callable[[float, str], None]:
    """A run_suite progress callback that says a line each time the run passes another `step` percent."""
    said = -step

    def progress(percent: float, what: str) -> None:
        nonlocal said
        if percent >= said + step:
            said = percent - percent % step
            say(f"{percent:.0f}%: {what}")

    return progress


def prepare_demo(
    project: Path, database_url: str, run_suites: bool, say: Callable[[str], None], public_url: str = ""
) -> None:
    upgrade(database_url)
    for release in release_runs(project / RELEASE_HISTORY):
        stored = load_runs(database_url, release.runs(), "main", public_url, commit_date=release.commit_date)
        say(
            f"TE {release.version} on an H200: {len(stored)} runs ({sum(new for _, new in stored)} new) "
            f"from {release.folder}, commit {release.commit[:10]} of {release.commit_date:%Y-%m-%d} "
            f"({release.dated_by})"
        )
    for history in (project / folder for folder in DISTRIBUTED_HISTORY):
        if not history.is_dir():
            raise FileNotFoundError(
                f"{history} is missing: the bundled H200 history ships with the repository"
            )
        stored = load_results(database_url, history, "main", public_url)
        say(
            f"TE 2.20.2 on two H200s: {len(stored)} runs ({sum(new for _, new in stored)} new) from {history}"
        )
    if run_suites:
        with tempfile.TemporaryDirectory(prefix="tewatch-demo-") as tmp:
            say("running the CPU suites (torch-ref, ci profile) through asv; this takes a few minutes ...")
            outcome = run_suite(
                RunOptions(
                    project=project,
                    profile="ci",
                    backends=("torch-ref",),
                    results_dir=Path(tmp),
                    commit=project_head(project),
                ),
                progress_every(10, lambda line: say(f"  CPU suites {line}")),
            )
            counts = ", ".join(f"{n} {status}" for status, n in sorted(outcome.counts.items()))
            say(f"CPU suites: {outcome.wall_seconds:.0f} s, verdicts: {counts}")
            stored = load_results(database_url, Path(tmp), "main", public_url, repo=PROJECT_REPO)
            say(
                f"CPU run stored: {len(stored)} runs, filed under the project's own repository ({PROJECT_REPO})"
            )
    campaign = project / CAMPAIGN
    base = single_commit(campaign / "base-results")
    load_results(database_url, campaign / "base-results", "main", public_url)
    stored = load_results(database_url, campaign / "head-results", f"pr-{DEMO_PR}", public_url, DEMO_PR, base)
    say(
        f"pull request {DEMO_PR}: the H200 A/B campaign's head ({sum(new for _, new in stored)} new) "
        f"against {base[:10]} from {campaign}"
    )
    engine = make_engine(database_url)
    try:
        for line in release_summaries(engine, public_url):
            say(line)
    finally:
        engine.dispose()


def where_to_look(database_url: str, public_url: str) -> list[str]:
    """Lines that point a newcomer at what the demo holds: failures, alerts, the pull request."""
    from sqlalchemy import func, select
    from sqlalchemy.orm import Session

    from tewatch.store.schema.alert_models import Alert, AlertStatus

    engine = make_engine(database_url)
    try:
        with Session(engine) as session:
            open_alerts = dict(
                session.execute(
                    select(Alert.kind, func.count())
                    .where(Alert.status == AlertStatus.open)
                    .group_by(Alert.kind)
                ).all()
            )
    finally:
        engine.dispose()
    alerts = ", ".join(
        f"{n} {getattr(kind, 'value', kind)}" for kind, n in sorted(open_alerts.items(), key=str)
    )
    return [
        f"failing cases first:   {public_url}/",
        f"compile vs eager grid: {public_url}/matrix",
        f"each TE release against the one before: {public_url}/releases",
        f"open alerts ({alerts or 'none'}): {public_url}/alerts",
        f"pull request {DEMO_PR} (A/B rounds on an H200, four sized slowdowns): {public_url}/pr/{DEMO_PR}",
        f"API documentation:     {public_url}/docs",
    ]

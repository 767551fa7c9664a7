"""`tewatch demo`: the bundled real H200 history plus one fresh CPU run of the suites, in one store, each run
followed by the detection an upload gets (correctness alerts open as a real upload stream opens them), and
the kept H200 A/B campaign as pull request 1."""

from __future__ import annotations

import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

from tewatch.campaign.pipeline import single_commit
from tewatch.ingest.bundle import UploadBundle
from tewatch.ingest.discover import RunFiles, find_runs
from tewatch.ingest.service import ingest_bundle
from tewatch.pipeline.detection import detect_after_upload
from tewatch.runner.suite import RunOptions, run_suite
from tewatch.store.database import make_engine
from tewatch.store.migrate import upgrade

# real runs on lent H200s with TE 2.20.2 (each folder's README says how they were made)
BUNDLED_HISTORY = tuple(
    Path("tests") / "fixtures" / name
    for name in ("h200-full", "h200-quick", "h200x2-distributed", "h200x2-distributed-compiled")
)
# base and head (four sized slowdowns) in A/B rounds on one H200: the head is pull request 1
CAMPAIGN = Path("tests") / "fixtures" / "h200-ab-rounds"
# TE's runs are filed under TE's repository, the project's own CPU runs (torch-ref) under its own
TE_REPO = "NVIDIA/TransformerEngine"
PROJECT_REPO = "tewatch"
DEMO_PR = 1


def bundle_of(
    run: RunFiles, branch: str, pr_number: int | None = None, merge_base: str | None = None, repo: str = ""
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
    )


def load_results(
    database_url: str,
    results_dir: Path,
    branch: str,
    public_url: str = "",
    pr_number: int | None = None,
    merge_base: str | None = None,
    repo: str = TE_REPO,
) -> list[tuple[int, bool]]:
    """Ingest every run under an asv results folder, each new one followed by the detection an upload gets;
    (run id, newly stored) for each."""
    engine = make_engine(database_url)
    try:
        stored = []
        for run in find_runs(results_dir):
            outcome = ingest_bundle(engine, bundle_of(run, branch, pr_number, merge_base, repo))
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


def prepare_demo(
    project: Path, database_url: str, run_suites: bool, say: Callable[[str], None], public_url: str = ""
) -> None:
    upgrade(database_url)
    for history in (project / folder for folder in BUNDLED_HISTORY):
        if not history.is_dir():
            raise FileNotFoundError(
                f"{history} is missing: the bundled H200 history ships with the repository"
            )
        stored = load_results(database_url, history, "main", public_url)
        say(f"H200 history: {len(stored)} runs ({sum(new for _, new in stored)} new) from {history}")
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
                lambda percent, what: None,
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


def where_to_look(database_url: str, public_url: str) -> list[str]:
    """Lines that point a newcomer at what the demo holds: failures, alerts, the pull request."""
    from sqlalchemy import func, select
    from sqlalchemy.orm import Session

    from tewatch.store.alert_models import Alert, AlertStatus

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
        f"open alerts ({alerts or 'none'}): {public_url}/alerts",
        f"pull request {DEMO_PR} (A/B rounds on an H200, four sized slowdowns): {public_url}/pr/{DEMO_PR}",
        f"API documentation:     {public_url}/docs",
    ]

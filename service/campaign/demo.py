"""`tewatch demo`: the bundled real H200 history plus one fresh CPU run of the suites, in one store."""

from __future__ import annotations

import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

from tewatch.ingest.bundle import UploadBundle
from tewatch.ingest.discover import RunFiles, find_runs
from tewatch.ingest.service import ingest_bundle
from tewatch.runner.suite import RunOptions, run_suite
from tewatch.store.database import make_engine
from tewatch.store.migrate import upgrade

# real runs on lent H200s with TE 2.20.2 (each folder's README says how they were made)
BUNDLED_HISTORY = tuple(Path("tests") / "fixtures" / name for name in (
    "h200-full", "h200-quick", "h200x2-distributed", "h200x2-distributed-compiled"))


def bundle_of(run: RunFiles, branch: str) -> UploadBundle:
    read = lambda path: path.read_bytes() if path else None  # noqa: E731
    return UploadBundle(
        result=run.result.read_bytes(), machine=run.machine.read_bytes(), benchmarks=run.benchmarks.read_bytes(),
        run=read(run.run), asv_stderr=read(run.asv_stderr),
        cases=[(path.name, path.read_bytes()) for path in run.cases], branch=branch,
    )


def load_results(database_url: str, results_dir: Path, branch: str) -> list[tuple[int, bool]]:
    """Ingest every run under an asv results folder; (run id, newly stored) for each."""
    engine = make_engine(database_url)
    try:
        return [(stored.run_id, stored.created)
                for stored in (ingest_bundle(engine, bundle_of(run, branch)) for run in find_runs(results_dir))]
    finally:
        engine.dispose()


def project_head(project: Path) -> str:
    """torch-ref is the project's own code: its CPU runs are filed under the project's commit."""
    done = subprocess.run(["git", "rev-parse", "HEAD"], cwd=project, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise FileNotFoundError(f"{project} is not a git checkout: {done.stderr.strip()}")
    return done.stdout.strip()


def prepare_demo(project: Path, database_url: str, run_suites: bool, say: Callable[[str], None]) -> None:
    upgrade(database_url)
    for history in (project / folder for folder in BUNDLED_HISTORY):
        if not history.is_dir():
            raise FileNotFoundError(f"{history} is missing: the bundled H200 history ships with the repository")
        stored = load_results(database_url, history, "main")
        say(f"H200 history: {len(stored)} runs ({sum(new for _, new in stored)} new) from {history}")
    if run_suites:
        with tempfile.TemporaryDirectory(prefix="tewatch-demo-") as tmp:
            say("running the CPU suites (torch-ref, ci profile) through asv; this takes a few minutes ...")
            outcome = run_suite(RunOptions(project=project, profile="ci", backends=("torch-ref",),
                                           results_dir=Path(tmp), commit=project_head(project)),
                                lambda percent, what: None)
            counts = ", ".join(f"{n} {status}" for status, n in sorted(outcome.counts.items()))
            say(f"CPU suites: {outcome.wall_seconds:.0f} s, verdicts: {counts}")
            stored = load_results(database_url, Path(tmp), "main")
            say(f"CPU run stored: {len(stored)} runs")

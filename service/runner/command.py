"""The `tewatch run` command: options, progress and the one-line error."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from tewatch.runner.suite import BACKENDS, RunError, RunOptions, run_suite


def run(
    profile: Annotated[str, typer.Option(help="full | quick (pull requests) | ci (torch-ref on CPU)")] = "full",
    backends: Annotated[str | None, typer.Option(help=f"comma-separated subset of {','.join(BACKENDS)}")] = None,
    bench: Annotated[str | None, typer.Option(help="regex of benchmarks to run (asv --bench)")] = None,
    machine: Annotated[str | None, typer.Option(help="asv machine name (default: host and GPU)")] = None,
    results_dir: Annotated[Path | None, typer.Option(help="default: asv.conf.json's results_dir")] = None,
    commit: Annotated[str | None, typer.Option(help="file the run under this commit instead of TE's")] = None,
    project: Annotated[Path, typer.Option(help="folder holding asv.conf.json and benchmarks/")] = Path("."),
    python: Annotated[str, typer.Option(help="the benchmark interpreter")] = sys.executable,
    launch_method: Annotated[str | None, typer.Option(
        help="asv's: spawn (a fresh interpreter per case) or forkserver (suites imported once); "
             "default forkserver for --profile ci, spawn otherwise")] = None,
) -> None:
    """Run the asv suites against the installed Transformer Engine and keep the sidecar records."""
    console = Console(stderr=True)
    opts = RunOptions(
        project=project.resolve(), profile=profile,
        backends=tuple(b.strip() for b in backends.split(",") if b.strip()) if backends else None,
        bench=bench, machine=machine, results_dir=results_dir, commit=commit, python=python,
        launch_method=launch_method,
    )
    try:
        with Progress(TextColumn("[bold]asv[/]"), BarColumn(), TextColumn("{task.percentage:>5.1f}%"),
                      TimeElapsedColumn(), TextColumn("{task.description}"), console=console,
                      transient=True) as bar:
            task = bar.add_task("probing", total=100)

            def progress(percent: float, what: str) -> None:
                bar.update(task, completed=percent, description=what[-70:])

            outcome = run_suite(opts, progress)
    except RunError as exc:
        console.print(f"[red]tewatch run: {exc}[/]", highlight=False)
        raise typer.Exit(1) from exc
    counts = ", ".join(f"{k} {v}" for k, v in sorted(outcome.counts.items()))
    if outcome.written_for_failures:
        written = ", ".join(f"{k} {v}" for k, v in sorted(outcome.written_for_failures.items()))
        counts += f" (records from asv's output for failed cases: {written})"
    console.print(f"results  {outcome.results_file}", highlight=False)
    console.print(f"sidecar  {outcome.sidecar}", highlight=False)
    console.print(f"commit   {outcome.commit} ({outcome.commit_source}); asv exit {outcome.asv_exit_code}; "
                  f"{outcome.wall_seconds:.1f} s; verdicts: {counts}", highlight=False)

"""The `tewatch run` command: options, progress and the one-line error."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from tewatch.runner.rounds import run_ab
from tewatch.runner.suite import BACKENDS, RunError, RunOptions, default_results_dir, run_suite

DEFAULT_ROUNDS = 3


def run(
    profile: Annotated[
        str,
        typer.Option(
            help="full | quick (pull requests) | ci (torch-ref on CPU, which needs --commit where TE is "
            "not installed)"
        ),
    ] = "full",
    backends: Annotated[
        str | None, typer.Option(help=f"comma-separated subset of {','.join(BACKENDS)}")
    ] = None,
    bench: Annotated[str | None, typer.Option(help="regex of benchmarks to run (asv --bench)")] = None,
    machine: Annotated[str | None, typer.Option(help="asv machine name (default: host and GPU)")] = None,
    results_dir: Annotated[Path | None, typer.Option(help="default: asv.conf.json's results_dir")] = None,
    commit: Annotated[
        str | None,
        typer.Option(
            help="file the run under this commit instead of TE's; needed where TE is not installed (a "
            "CPU machine), e.g. --commit $(git rev-parse HEAD)"
        ),
    ] = None,
    project: Annotated[Path, typer.Option(help="folder holding asv.conf.json and benchmarks/")] = Path("."),
    python: Annotated[str, typer.Option(help="the benchmark interpreter")] = sys.executable,
    launch_method: Annotated[
        str | None,
        typer.Option(
            help="asv's: spawn (a fresh interpreter per case) or forkserver (suites imported once); "
            "default forkserver for --profile ci and wherever the probe's fork check passes, spawn otherwise"
        ),
    ] = None,
    ab: Annotated[
        bool,
        typer.Option(
            "--ab",
            help="A/B rounds: base (--python) and head (--head-python and/or --head-env) measured "
            "alternately, every case in a fresh process each round, into RESULTS_DIR/base and "
            "RESULTS_DIR/head",
        ),
    ] = False,
    rounds: Annotated[int, typer.Option(help="rounds per side with --ab")] = DEFAULT_ROUNDS,
    head_python: Annotated[str | None, typer.Option(help="--ab: the head's interpreter (its own TE)")] = None,
    head_env: Annotated[
        list[str] | None,
        typer.Option(help="--ab: NAME=VALUE set for the head only (e.g. TEWATCH_PERTURB=...); repeatable"),
    ] = None,
    head_commit: Annotated[str | None, typer.Option(help="--ab: file the head under this commit")] = None,
) -> None:
    """Run the asv suites against the installed Transformer Engine and keep the sidecar records."""
    console = Console(stderr=True)
    opts = RunOptions(
        project=project.resolve(),
        profile=profile,
        backends=tuple(b.strip() for b in backends.split(",") if b.strip()) if backends else None,
        bench=bench,
        machine=machine,
        results_dir=results_dir,
        commit=commit,
        python=python,
        launch_method=launch_method,
    )
    if ab:
        _run_ab(console, opts, rounds, head_python, head_env or [], head_commit)
        return
    try:
        with _progress(console) as progress:
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
    console.print(
        f"commit   {outcome.commit} ({outcome.commit_source}); asv exit {outcome.asv_exit_code}; "
        f"{outcome.wall_seconds:.1f} s; verdicts: {counts}",
        highlight=False,
    )


@contextmanager
def _progress(console: Console) -> Iterator[Callable[[float, str], None]]:
    """A bar on a terminal; elsewhere (a CI log, a pipe) a line per case asv starts, with its percentage."""
    if not console.is_terminal:
        started = time.monotonic()

        def line(percent: float, what: str) -> None:
            elapsed = time.monotonic() - started
            console.print(f"asv {percent:5.1f}% {elapsed:6.0f} s  {what}", highlight=False, soft_wrap=True)

        yield line
        return
    with Progress(
        TextColumn("[bold]asv[/]"),
        BarColumn(),
        TextColumn("{task.percentage:>5.1f}%"),
        TimeElapsedColumn(),
        TextColumn("{task.description}"),
        console=console,
        transient=True,
    ) as bar:
        task = bar.add_task("probing", total=100)

        def update(percent: float, what: str) -> None:
            bar.update(task, completed=percent, description=what[-70:])

        yield update


def _run_ab(
    console: Console,
    base: RunOptions,
    rounds: int,
    head_python: str | None,
    head_env: list[str],
    head_commit: str | None,
) -> None:
    extra = {}
    for item in head_env:
        name, sep, value = item.partition("=")
        if not sep or not name:
            console.print(f"[red]tewatch run: --head-env wants NAME=VALUE, not {item!r}[/]", highlight=False)
            raise typer.Exit(2)
        extra[name] = value
    if head_python is None and not extra:
        console.print("[red]tewatch run: --ab needs --head-python or --head-env[/]", highlight=False)
        raise typer.Exit(2)
    folder = (base.results_dir or default_results_dir(base.project)).resolve()
    base_opts = replace(base, results_dir=folder / "base")
    head_opts = replace(
        base,
        results_dir=folder / "head",
        python=head_python or base.python,
        extra_env=extra,
        commit=head_commit,
    )
    try:
        outcome = run_ab(
            [("base", base_opts), ("head", head_opts)],
            rounds,
            say=lambda text: console.print(f"[bold]ab[/] {text}", highlight=False),
        )
    except RunError as exc:
        console.print(f"[red]tewatch run: {exc}[/]", highlight=False)
        raise typer.Exit(1) from exc
    for name, side in outcome.sides.items():
        counts = ", ".join(f"{k} {v}" for k, v in sorted(side.counts.items()))
        console.print(
            f"{name:5s} {side.results_file} (commit {side.commit}); verdicts: {counts}", highlight=False
        )
    console.print(
        f"{outcome.rounds} rounds in {outcome.wall_seconds:.1f} s (session {outcome.session})",
        highlight=False,
    )

"""`tewatch backfill`: a range of TE's commits measured at a stride and uploaded as a branch's history."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from tewatch.bisect.backfill import Backfill, chosen
from tewatch.bisect.environments import TE_BINARIES, TE_PACKAGE, TE_SMOKE, EnvironmentMaker
from tewatch.bisect.gitrepo import GitError, Repository
from tewatch.bisect.suite_runs import RunError, SelectionError, SuiteRun
from tewatch.bisect.uploads import RunUploader
from tewatch.cli.app import app
from tewatch.cli.options import fail
from tewatch.client.api import ApiClient, ClientError
from tewatch.client.retries import RetryPolicy


@app.command()
def backfill(
    start: Annotated[str, typer.Option("--from", help="the first commit measured")],
    end: Annotated[str, typer.Option("--to", help="the last commit measured (a descendant of --from)")],
    repo: Annotated[Path, typer.Option(help="TE's git checkout or bare git directory")],
    bench: Annotated[str, typer.Option(help="the subset: a regular expression of benchmarks (asv --bench)")],
    url: Annotated[str, typer.Option(envvar="TEWATCH_URL", help="the service the runs go to")],
    token: Annotated[str | None, typer.Option(envvar="TEWATCH_TOKEN")] = None,
    branch: Annotated[str, typer.Option(help="the branch the runs are filed on")] = "main",
    stride: Annotated[int, typer.Option(help="measure every Nth first-parent commit (and the last)")] = 1,
    project: Annotated[Path, typer.Option(help="folder holding asv.conf.json and benchmarks/")] = Path("."),
    profile: Annotated[str, typer.Option(help="full | quick | ci")] = "full",
    machine: Annotated[str | None, typer.Option(help="asv machine name")] = None,
    base_python: Annotated[str, typer.Option(help="interpreter with a built TE")] = sys.executable,
    package: Annotated[str, typer.Option(help="the package's import name")] = TE_PACKAGE,
    binaries: Annotated[str, typer.Option(help="globs of the built files the overlay links")] = ",".join(
        TE_BINARIES
    ),
    smoke: Annotated[str, typer.Option(help="Python run in each environment before it is used")] = TE_SMOKE,
    build_command: Annotated[
        str | None, typer.Option(help="build each commit with this bash command")
    ] = None,
    work: Annotated[Path, typer.Option(help="environments and results")] = Path(".te/backfill"),
    github: Annotated[str, typer.Option(help="owner/name the runs name")] = "NVIDIA/TransformerEngine",
) -> None:
    """Measure a commit range at a stride and upload each commit as a run on --branch, oldest first."""
    repository = Repository(repo.resolve())
    suite = SuiteRun(project=project.resolve(), bench=bench, profile=profile, machine=machine)
    try:
        first, last = repository.resolve(start), repository.resolve(end)
        if first != last and not repository.is_ancestor(first, last):
            raise GitError(f"--from {first[:12]} is not an ancestor of --to {last[:12]}")
        commits = chosen(repository.line(first, last) if first != last else [first], stride)
        suite.selected(base_python)
    except (GitError, SelectionError, ValueError) as exc:
        raise fail(str(exc)) from None
    maker = EnvironmentMaker(
        repository,
        work.resolve() / "envs",
        base_python=base_python,
        package=package,
        binaries=tuple(b for b in binaries.split(",") if b),
        smoke=smoke,
        build_command=build_command,
    )
    console = Console(stderr=True)
    columns = (TextColumn("[bold]backfill[/]"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    try:
        with ApiClient(url, token) as client, Progress(*columns, console=console) as bar:
            task = bar.add_task("", total=len(commits))
            uploader = RunUploader(client, github, branch, RetryPolicy())
            filling = Backfill(maker, suite, work.resolve() / "runs", uploader)
            for done in filling.run(commits):
                if done.run_id is None:
                    bar.console.print(f"{done.commit[:12]} skipped: {done.skip_reason}", highlight=False)
                else:
                    bar.console.print(f"{done.commit[:12]} run {done.run_id}", highlight=False)
                bar.advance(task)
    except (RunError, ClientError) as exc:
        raise fail(str(exc)) from None

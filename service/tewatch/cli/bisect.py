"""`tewatch bisect`: the first commit between a good and a bad one where the selected cases turn bad."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from tewatch.bisect.environments import TE_BINARIES, TE_PACKAGE, TE_SMOKE, EnvironmentMaker
from tewatch.bisect.gitrepo import GitError, Repository
from tewatch.bisect.judges import JUDGES
from tewatch.bisect.session import BisectError, Bisector, ask
from tewatch.bisect.state import State, StateError, Step
from tewatch.bisect.suite_runs import RunError, SuiteRun
from tewatch.bisect.uploads import RunUploader, bisection_body, bisection_branch
from tewatch.cli.app import app
from tewatch.cli.options import fail
from tewatch.client.api import ApiClient, ClientError
from tewatch.client.retries import RetryPolicy

GITHUB = "https://github.com"


@app.command()
def bisect(
    good: Annotated[str, typer.Option(help="a commit where the selected cases are as they should be")],
    bad: Annotated[str, typer.Option(help="a later commit where they are not")],
    repo: Annotated[Path, typer.Option(help="TE's git checkout or bare git directory")],
    bench: Annotated[str, typer.Option(help="the cases: a regular expression of benchmarks (asv --bench)")],
    judge: Annotated[
        str, typer.Option(help=f"what makes a commit bad: {' | '.join(JUDGES)}")
    ] = "correctness",
    value: Annotated[str, typer.Option(help="--judge value: the metric or timed method")] = "",
    project: Annotated[Path, typer.Option(help="folder holding asv.conf.json and benchmarks/")] = Path("."),
    profile: Annotated[str, typer.Option(help="full | quick | ci")] = "full",
    backends: Annotated[str | None, typer.Option(help="comma-separated backends")] = None,
    machine: Annotated[str | None, typer.Option(help="asv machine name")] = None,
    rounds: Annotated[int, typer.Option(help="--judge performance: A/B rounds a step")] = 3,
    base_python: Annotated[
        str, typer.Option(help="interpreter with a built TE (the overlay's base)")
    ] = sys.executable,
    package: Annotated[str, typer.Option(help="the package's import name")] = TE_PACKAGE,
    package_path: Annotated[str | None, typer.Option(help="its folder in the repository")] = None,
    binaries: Annotated[
        str, typer.Option(help="comma-separated globs of the built files the overlay links from the base")
    ] = ",".join(TE_BINARIES),
    smoke: Annotated[str, typer.Option(help="Python run in each environment before it is used")] = TE_SMOKE,
    build_command: Annotated[
        str | None,
        typer.Option(
            help="build each commit with this bash command instead of the Python overlay (docs/bisect.md)"
        ),
    ] = None,
    work: Annotated[Path, typer.Option(help="environments, results and the state file")] = Path(".te/bisect"),
    state: Annotated[
        Path | None, typer.Option(help="state file (default: under --work, per endpoints)")
    ] = None,
    max_minutes: Annotated[
        float | None, typer.Option(help="stop before a step that would end past this")
    ] = None,
    url: Annotated[
        str | None, typer.Option(envvar="TEWATCH_URL", help="upload every step to this service")
    ] = None,
    token: Annotated[str | None, typer.Option(envvar="TEWATCH_TOKEN")] = None,
    alert: Annotated[
        int | None, typer.Option(help="the alert this bisection answers (linked on the service)")
    ] = None,
    change_point: Annotated[int | None, typer.Option(help="the change point it answers")] = None,
    github: Annotated[
        str, typer.Option(help="owner/name of the repository on GitHub")
    ] = "NVIDIA/TransformerEngine",
) -> None:
    """Find the first commit between --good and --bad where the selected cases turn bad (docs/bisect.md)."""
    suite = SuiteRun(
        project=project.resolve(),
        bench=bench,
        profile=profile,
        backends=tuple(b for b in backends.split(",") if b) if backends else None,
        machine=machine,
        rounds=rounds,
    )
    if judge not in JUDGES:
        raise fail(f"--judge must be one of {', '.join(JUDGES)}, not {judge!r}")
    repository = Repository(repo.resolve())
    work = work.resolve()
    try:
        question, commits = ask(repository, good, bad, judge, suite, base_python, value)
    except BisectError as exc:
        raise fail(str(exc)) from None
    state_path = state or work / f"{question.good[:12]}-{question.bad[:12]}.json"
    state_path.parent.mkdir(parents=True, exist_ok=True)
    maker = EnvironmentMaker(
        repository,
        work / "envs",
        base_python=base_python,
        package=package,
        package_path=package_path,
        binaries=tuple(b for b in binaries.split(",") if b),
        smoke=smoke,
        build_command=build_command,
    )
    client = ApiClient(url, token) if url else None
    uploader = (
        RunUploader(client, github, bisection_branch(question.good, question.bad), RetryPolicy())
        if client
        else None
    )

    def upload(_: State, step: Step, results_file: Path) -> int | None:
        return uploader.upload(results_file) if uploader else None

    def report(now: State) -> None:
        if client:
            stored = client.put_bisection(bisection_body(now, repository, github, alert, change_point))
            now.bisection_id = stored["id"]

    try:
        bisector = Bisector.open(
            question,
            commits,
            state_path,
            maker=maker,
            suite=suite,
            work=work / "runs",
            budget_s=max_minutes * 60 if max_minutes is not None else None,
            upload=upload if uploader else None,
            saved=report if client else None,
            say=lambda text: typer.echo(f"bisect: {text}", err=True),
        )
        typer.echo(
            f"bisecting {len(commits) - 2} commits between {question.good[:12]} and {question.bad[:12]}",
            err=True,
        )
        result = bisector.run()
    except (BisectError, StateError, RunError, ClientError) as exc:
        raise fail(str(exc)) from None
    except GitError as exc:  # the repository went away or broke mid-run: the state file keeps every step
        raise fail(f"the repository cannot be read: {exc}") from None
    finally:
        if client:
            client.close()
    measured = sum(1 for s in result.steps if s.results)
    typer.echo(f"state: {state_path} ({measured} commits measured, {result.spent_s:.0f} s)")
    if result.bisection_id is not None and url:
        typer.echo(f"{url.rstrip('/')}/bisections/{result.bisection_id}")
    if result.status != "finished":
        raise fail(result.message, code=2 if result.status == "no_difference" else 3)
    found = bisector.finding()
    assert found is not None
    if found.culprit:
        typer.echo(f"first bad commit: {found.culprit} {repository.subject(found.culprit)}")
        typer.echo(f"{GITHUB}/{github}/commit/{found.culprit}")
    else:
        typer.echo(f"the first bad commit is one of {len(found.candidates)} (skips allow no less):")
        for sha in found.candidates:
            typer.echo(f"  {sha} {repository.subject(sha)}")

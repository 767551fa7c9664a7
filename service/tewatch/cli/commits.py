"""`tewatch commits`: send a repository's git graph, so the service orders its commits by it."""

from __future__ import annotations

import subprocess
from pathlib import Path

import typer

from tewatch.cli.app import app
from tewatch.cli.options import fail


def git_graph(repository: Path, revision: str) -> list[tuple[str, int, list[str]]]:
    """(sha, committer time, parents) of every commit reachable from `revision`, parents first."""
    done = subprocess.run(
        ["git", "-C", str(repository), "log", "--topo-order", "--reverse", "--format=%H %ct %P", revision],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise fail(f"git log in {repository}: {done.stderr.strip()}")
    commits = []
    for line in done.stdout.splitlines():
        sha, committed, *parents = line.split()
        commits.append((sha, int(committed), parents))
    return commits


@app.command()
def commits(
    repository: Path = typer.Argument(Path("."), help="the benchmarked project's git checkout"),
    url: str = typer.Option(..., envvar="TEWATCH_URL", help="service base URL, e.g. http://127.0.0.1:8000"),
    token: str = typer.Option(..., envvar="TEWATCH_TOKEN", help="upload token (`tewatch token create`)"),
    revision: str = typer.Option("HEAD", "--rev", help="the history to send: what `git log REV` lists"),
    repo: str = typer.Option("", help="repository name, as given to `tewatch upload --repo`"),
) -> None:
    """Send the git graph of REPOSITORY (every commit reachable from --rev with its parents) so that
    histories, change points and "latest" follow it: a commit never sorts before its parent, whatever its
    date. Commits the graph lacks keep their results file's date. Run `tewatch detect` afterwards to
    re-detect change points in the new order."""
    from tewatch.client.api import ApiClient, ClientError

    graph = git_graph(repository, revision)
    if not graph:
        raise fail(f"no commits reachable from {revision} in {repository}")
    try:
        with ApiClient(url, token) as client:
            body = client.send_commit_graph(repo, graph)
    except ClientError as exc:
        raise fail(str(exc)) from None
    typer.echo(f"sent {body['commits']} commits; {body['placed']} stored commits now follow the graph")

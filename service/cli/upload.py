"""`tewatch upload`: send every run under an asv results directory to the service."""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path
from typing import Annotated

import typer
from tewatch.cli.app import app
from tewatch.cli.options import fail

UPLOAD_TIMEOUT_S = 300.0


@app.command()
def upload(
    results_dir: Annotated[Path, typer.Argument(help="asv results directory (holds benchmarks.json)")],
    url: str = typer.Option(..., envvar="TEWATCH_URL", help="service base URL, e.g. http://127.0.0.1:8000"),
    token: str = typer.Option(..., envvar="TEWATCH_TOKEN", help="upload token (`tewatch token create`)"),
    branch: str | None = typer.Option(None, help="branch the commit was benchmarked on"),
    pr: int | None = typer.Option(None, "--pr", help="pull request number (with --base)"),
    base: str | None = typer.Option(None, "--base", help="merge-base sha of the pull request (with --pr)"),
    repo: str = typer.Option("", help="repository, e.g. NVIDIA/TransformerEngine"),
) -> None:
    """Upload each results file with its machine.json, benchmarks.json and tewatch sidecar."""
    import httpx
    from rich.console import Console
    from rich.progress import Progress
    from tewatch.ingest.discover import DiscoveryError, find_runs

    if (pr is None) != (base is None):
        raise fail("--pr and --base go together: a pull request run needs its merge base")
    try:
        runs = find_runs(results_dir)
    except DiscoveryError as exc:
        raise fail(str(exc)) from exc
    if not runs:
        raise fail(f"no asv results files under {results_dir}")
    fields = {"repo": repo, "branch": branch or "", "pr_number": str(pr or ""), "merge_base_sha": base or ""}
    endpoint = url.rstrip("/") + "/api/v1/runs"
    failures = 0
    headers = {"Authorization": f"Bearer {token}"}
    progress = Progress(console=Console(stderr=True), transient=True)
    with httpx.Client(timeout=UPLOAD_TIMEOUT_S, headers=headers) as client, progress:
        task = progress.add_task("uploading", total=len(runs))
        for run in runs:
            name = (
                run.result.relative_to(results_dir) if run.result.is_relative_to(results_dir) else run.result
            )
            progress.update(task, description=f"uploading {name}")
            line, ok = _upload_one(client, endpoint, run, fields)
            failures += not ok
            typer.echo(f"{line}" if ok else f"error: {name}: {line}", err=not ok)
            progress.advance(task)
    if failures:
        raise fail(f"{failures} of {len(runs)} uploads failed")


def _upload_one(client, endpoint: str, run, fields: dict[str, str]) -> tuple[str, bool]:
    """One line saying what happened, and whether the run is stored."""
    import httpx

    try:
        answer = _send(client, endpoint, run, fields)
    except httpx.HTTPError as exc:
        return f"{type(exc).__name__}: {exc}", False
    if not answer.is_success:
        return f"HTTP {answer.status_code}: {_detail(answer)}", False
    return _stored_line(run.result.name, answer.json()), True


def _send(client, endpoint: str, run, fields: dict[str, str]):
    with ExitStack() as stack:
        files = [
            (part, (path.name, stack.enter_context(path.open("rb")), "application/octet-stream"))
            for part, path in run.parts()
        ]
        return client.post(endpoint, data={k: v for k, v in fields.items() if v}, files=files)


# asv's result statuses (tewatch.store.models.ResultStatus), in words that cannot be read as verdicts:
# "failed" is asv's, a benchmark that raised and left no value, whatever the case's verdict says
RESULT_WORDS = {"ok": "measured", "failed": "failed to run", "timeout": "timed out", "skipped": "skipped",
                "unsupported": "unsupported"}
VERDICT_ORDER = ("pass", "fail_accuracy", "error", "timeout", "oom", "unsupported")


def _counts(counts: dict[str, int], order, words: dict[str, str] | None = None) -> str:
    ranked = sorted(counts.items(), key=lambda kv: (order.index(kv[0]) if kv[0] in order else len(order), kv[0]))
    return ", ".join(f"{n} {(words or {}).get(status, status)}" for status, n in ranked)


def _stored_line(name: str, body: dict) -> str:
    """`run 5 created: NAME (asv results: 200 measured, 9 failed to run; case verdicts: 189 pass, 9 error,
    2 fail_accuracy)`: each count says whether it counts asv's results or the cases' verdicts."""
    state = "created" if body["created"] else "already stored"
    results = _counts(body["results"], tuple(RESULT_WORDS), RESULT_WORDS) or "none"
    verdicts = _counts(body["verdicts"], VERDICT_ORDER) or "none"
    return f"run {body['run_id']} {state}: {name} (asv results: {results}; case verdicts: {verdicts})"


def _detail(answer) -> str:
    try:
        detail = answer.json().get("detail")
    except ValueError:
        return answer.text[:500]
    return detail if isinstance(detail, str) else str(detail)

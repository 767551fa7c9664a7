"""`tewatch upload`: send every run under an asv results directory to the service."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from tewatch.cli.app import app
from tewatch.cli.options import fail
from tewatch.client.retries import RETRY_ATTEMPTS, RETRY_FOR_S, RETRY_WAIT_MAX_S, RETRY_WAIT_S, RetryPolicy
from tewatch.core.branches import DEFAULT_BRANCH

if TYPE_CHECKING:
    from tewatch.client.api import ApiClient


@app.command()
def upload(
    results_dir: Annotated[Path, typer.Argument(help="asv results directory (holds benchmarks.json)")],
    url: str = typer.Option(..., envvar="TEWATCH_URL", help="service base URL, e.g. http://127.0.0.1:8000"),
    token: str = typer.Option(..., envvar="TEWATCH_TOKEN", help="upload token (`tewatch token create`)"),
    branch: str | None = typer.Option(
        None,
        help=f"branch the commit was benchmarked on; without it and without --pr, {DEFAULT_BRANCH}",
    ),
    pr: int | None = typer.Option(None, "--pr", help="pull request number (with --base)"),
    base: str | None = typer.Option(None, "--base", help="merge-base sha of the pull request (with --pr)"),
    repo: str = typer.Option("", help="repository, e.g. NVIDIA/TransformerEngine"),
    attempts: int = typer.Option(
        RETRY_ATTEMPTS,
        "--attempts",
        min=1,
        max=100,
        help="tries per results file: only connection errors, timeouts, HTTP 5xx and 429 are retried",
    ),
    retry_for: float = typer.Option(
        RETRY_FOR_S, "--retry-for", min=0, help="seconds after a file's first try past which no retry starts"
    ),
    retry_wait: float = typer.Option(
        RETRY_WAIT_S,
        "--retry-wait",
        min=0,
        help=f"first backoff in seconds, doubled on each retry, plus a jitter of up to this much, at most "
        f"{RETRY_WAIT_MAX_S:.0f} s; an answer's Retry-After (up to {RETRY_WAIT_MAX_S:.0f} s) replaces it",
    ),
) -> None:
    """Upload each results file with its machine.json, benchmarks.json and tewatch sidecar. A file whose
    upload fails on the connection, times out or gets HTTP 5xx or 429 is sent again with exponential
    backoff, up to --attempts tries and --retry-for seconds; any other 4xx is final. The service stores the
    same files only once, so a retried upload never lands twice."""
    from rich.console import Console
    from rich.progress import Progress
    from stamina.instrumentation import get_on_retry_hooks, set_on_retry_hooks

    from tewatch.client.api import ApiClient, ClientError
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
    batch = len(runs) > 1  # one detection pass after the last upload instead of one after each
    # with runs whose answer was lost after the service stored them: detection is idempotent
    stored: list[int] = []
    failures = 0
    policy = RetryPolicy(attempts, retry_for, retry_wait)
    progress = Progress(console=Console(stderr=True), transient=True)
    hooks = get_on_retry_hooks()
    # say each retry on stderr in our words (stamina would log it as a bare `stamina.retry_scheduled`)
    set_on_retry_hooks([lambda details: _say_retry(details, policy)])
    try:
        with ApiClient(url, token) as client, progress:
            task = progress.add_task("uploading", total=len(runs))
            for run in runs:
                name = (
                    run.result.relative_to(results_dir)
                    if run.result.is_relative_to(results_dir)
                    else run.result
                )
                progress.update(task, description=f"uploading {name}")
                sent = client.upload(run.parts(), fields, policy, detect=not batch)
                if sent.stored is None:
                    failures += 1
                    typer.echo(f"error: {name}: {sent.error}{_after(sent.tries)}", err=True)
                else:
                    stored.append(sent.stored["run_id"])
                    typer.echo(_stored_line(run.result.name, sent.stored) + _after(sent.tries))
                progress.advance(task)
            detected = True
            if batch and stored:
                progress.update(task, description=f"detecting after {len(stored)} runs")
                detected = _detect_batch(client, branch, stored, policy)
            base_note = _base_without_runs(client, base, stored) if base and stored else ""
    except ClientError as exc:
        raise fail(str(exc)) from None
    finally:
        set_on_retry_hooks(hooks)
    if base_note:
        typer.echo(base_note, err=True)
    if failures:
        raise fail(f"{failures} of {len(runs)} uploads failed")
    if not detected:
        raise fail(
            "the runs are stored, detection after them failed: `tewatch detect` runs it over the branch"
        )


def _detect_batch(client: ApiClient, branch: str | None, run_ids: list[int], policy: RetryPolicy) -> bool:
    """Detection after the runs of this upload, in one pass, retried as the uploads are; says what it
    found."""
    from tewatch.client.api import ClientError

    try:
        found = client.detect(branch or DEFAULT_BRANCH, run_ids, policy)
    except ClientError as exc:
        typer.echo(f"error: detection after {len(run_ids)} runs: {exc}", err=True)
        return False
    typer.echo(
        f"detection after {len(run_ids)} runs: {found['series']} series, {found['change_points']} new "
        f"change points ({found['new_regressions']} regressions), {found['withdrawn']} withdrawn, "
        f"{found['correctness_alerts']} correctness alerts, {found['resolved_alerts']} resolved",
        err=True,
    )
    return True


def _base_without_runs(client: ApiClient, base: str, run_ids: list[int]) -> str:
    """A warning when the merge base has no run (outside pull requests) on the uploaded runs' machines nor
    their GPU models: every timing of the pull request will be inconclusive. "" when it has."""
    heads = [client.run(run_id) for run_id in run_ids]
    base_runs = [r for r in client.runs({"commit": base}) if r.get("pr_number") is None]
    missing = sorted(
        {
            f"{head['machine_name']} ({head['gpu_model']})"
            for head in heads
            if not any(r["gpu_model"] == head["gpu_model"] for r in base_runs)
        }
    )
    if not missing:
        return ""
    return (
        f"warning: the merge base {base[:12]} has no runs on {', '.join(missing)}: every timing of this pull "
        "request is inconclusive and every failing case counts as new. Upload the merge base's results "
        "measured on that machine (`tewatch upload RESULTS --branch main`, at that commit), or measure base "
        "and head there in A/B rounds (`tewatch run --ab`)."
    )


def _say_retry(details, policy: RetryPolicy) -> None:
    from tewatch.client.retries import RetryableAnswer

    cause = details.caused_by
    why = str(cause) if isinstance(cause, RetryableAnswer) else f"{type(cause).__name__}: {cause}"
    typer.echo(
        f"retrying in {details.wait_for:.2f} s (try {details.retry_num + 1} of {policy.attempts}): {why}",
        err=True,
    )


def _after(tries: int) -> str:
    return f" (after {tries} tries)" if tries > 1 else ""


# asv's result statuses (tewatch.store.schema.models.ResultStatus), in words that cannot be read as verdicts:
# "failed" is asv's, a benchmark that raised and left no value, whatever the case's verdict says
RESULT_WORDS = {
    "ok": "measured",
    "failed": "failed to run",
    "timeout": "timed out",
    "skipped": "skipped",
    "unsupported": "unsupported",
}
VERDICT_ORDER = ("pass", "fail_accuracy", "error", "timeout", "oom", "unsupported")


def _counts(counts: dict[str, int], order, words: dict[str, str] | None = None) -> str:
    ranked = sorted(
        counts.items(), key=lambda kv: (order.index(kv[0]) if kv[0] in order else len(order), kv[0])
    )
    return ", ".join(f"{n} {(words or {}).get(status, status)}" for status, n in ranked)


def _stored_line(name: str, body: dict) -> str:
    """`run 5 created: NAME (asv results: 200 measured, 9 failed to run; case verdicts: 189 pass, 9 error,
    2 fail_accuracy)`: each count says whether it counts asv's results or the cases' verdicts; then what
    was read as asv reads it: an older results format, benchmarks that benchmarks.json lacks."""
    state = "created" if body["created"] else "already stored"
    results = _counts(body["results"], tuple(RESULT_WORDS), RESULT_WORDS) or "none"
    verdicts = _counts(body["verdicts"], VERDICT_ORDER) or "none"
    line = f"run {body['run_id']} {state}: {name} (asv results: {results}; case verdicts: {verdicts})"
    if body.get("results_format", 2) != 2:
        line += f"; read from asv results format {body['results_format']}"
    skipped = body.get("skipped_benchmarks")
    if skipped:
        names = ", ".join(skipped["names"]) + (", ..." if skipped["count"] > len(skipped["names"]) else "")
        line += f"; skipped {skipped['count']} not in benchmarks.json, as asv does: {names}"
    return line

"""`tewatch upload`: send every run under an asv results directory to the service."""

from __future__ import annotations

from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import typer

from tewatch.cli.app import app
from tewatch.cli.options import fail

UPLOAD_TIMEOUT_S = 300.0
# Retries: uploads are idempotent (the service keeps a content digest and answers a repeat with the run
# it already stored), so a try that failed on the way, even after the service stored it, is safe to repeat.
RETRY_ATTEMPTS = 5
RETRY_FOR_S = 120.0
RETRY_WAIT_S = 1.0
RETRY_WAIT_MAX_S = 30.0


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int
    retry_for: float
    wait: float

    @property
    def wait_max(self) -> float:
        return max(self.wait, RETRY_WAIT_MAX_S)


class RetryableAnswer(Exception):
    """An answer worth trying again: the service failed (5xx) or asked the client to slow down (429)."""

    def __init__(self, answer) -> None:
        super().__init__(f"HTTP {answer.status_code}: {_detail(answer)}")
        self.answer = answer


def retryable_status(code: int) -> bool:
    return code == 429 or 500 <= code <= 599


@app.command()
def upload(
    results_dir: Annotated[Path, typer.Argument(help="asv results directory (holds benchmarks.json)")],
    url: str = typer.Option(..., envvar="TEWATCH_URL", help="service base URL, e.g. http://127.0.0.1:8000"),
    token: str = typer.Option(..., envvar="TEWATCH_TOKEN", help="upload token (`tewatch token create`)"),
    branch: str | None = typer.Option(None, help="branch the commit was benchmarked on"),
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
    import httpx
    from rich.console import Console
    from rich.progress import Progress
    from stamina.instrumentation import get_on_retry_hooks, set_on_retry_hooks

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
    endpoint = url.rstrip("/") + "/api/v1/runs" + ("?detect=later" if batch else "")
    stored: list[
        int
    ] = []  # with runs whose answer was lost after the service stored them: detection is idempotent
    failures = 0
    headers = {"Authorization": f"Bearer {token}"}
    policy = RetryPolicy(attempts, retry_for, retry_wait)
    progress = Progress(console=Console(stderr=True), transient=True)
    hooks = get_on_retry_hooks()
    # say each retry on stderr in our words (stamina would log it as a bare `stamina.retry_scheduled`)
    set_on_retry_hooks([lambda details: _say_retry(details, policy)])
    try:
        with httpx.Client(timeout=UPLOAD_TIMEOUT_S, headers=headers) as client, progress:
            task = progress.add_task("uploading", total=len(runs))
            for run in runs:
                name = (
                    run.result.relative_to(results_dir)
                    if run.result.is_relative_to(results_dir)
                    else run.result
                )
                progress.update(task, description=f"uploading {name}")
                line, ok, run_id = _upload_one(client, endpoint, run, fields, policy)
                failures += not ok
                if run_id is not None:
                    stored.append(run_id)
                typer.echo(f"{line}" if ok else f"error: {name}: {line}", err=not ok)
                progress.advance(task)
            detected = True
            if batch and stored:
                progress.update(task, description=f"detecting after {len(stored)} runs")
                detected = _detect_batch(client, url.rstrip("/") + "/api/v1/detect", branch, stored)
    finally:
        set_on_retry_hooks(hooks)
    if failures:
        raise fail(f"{failures} of {len(runs)} uploads failed")
    if not detected:
        raise fail(
            "the runs are stored, detection after them failed: `tewatch detect` runs it over the branch"
        )


def _upload_one(
    client, endpoint: str, run, fields: dict[str, str], policy: RetryPolicy
) -> tuple[str, bool, int | None]:
    """One line saying what happened, whether the run is stored, and its id once stored."""
    import httpx
    import stamina

    tries = 0
    try:
        for attempt in stamina.retry_context(
            on=_retry_backoff,
            attempts=policy.attempts,
            timeout=policy.retry_for,
            wait_initial=policy.wait,
            wait_max=policy.wait_max,
            wait_jitter=policy.wait,
            wait_exp_base=2,
        ):
            with attempt:
                tries = attempt.num
                answer = _send(client, endpoint, run, fields)
                if retryable_status(answer.status_code):
                    raise RetryableAnswer(answer)
    except RetryableAnswer as exc:
        return f"{exc}{_after(tries)}", False, None
    except httpx.HTTPError as exc:
        return f"{type(exc).__name__}: {exc}{_after(tries)}", False, None
    if not answer.is_success:
        return f"HTTP {answer.status_code}: {_detail(answer)}", False, None
    body = answer.json()
    return _stored_line(run.result.name, body) + _after(tries), True, body["run_id"]


def _detect_batch(client, endpoint: str, branch: str | None, run_ids: list[int]) -> bool:
    """Detection after the runs of this upload, in one pass; says what it found."""
    import httpx

    try:
        answer = client.post(endpoint, json={"branch": branch or "main", "runs": run_ids})
    except httpx.HTTPError as exc:
        typer.echo(f"error: detection after {len(run_ids)} runs: {type(exc).__name__}: {exc}", err=True)
        return False
    if not answer.is_success:
        typer.echo(
            f"error: detection after {len(run_ids)} runs: HTTP {answer.status_code}: {_detail(answer)}",
            err=True,
        )
        return False
    found = answer.json()
    typer.echo(
        f"detection after {len(run_ids)} runs: {found['series']} series, {found['change_points']} new "
        f"change points ({found['new_regressions']} regressions), {found['withdrawn']} withdrawn, "
        f"{found['correctness_alerts']} correctness alerts, {found['resolved_alerts']} resolved",
        err=True,
    )
    return True


def _retry_backoff(exc: Exception) -> bool | float:
    """Whether a failed try is worth another (True, or the seconds a Retry-After asks for)."""
    import httpx

    if isinstance(exc, RetryableAnswer):
        asked = _retry_after(exc.answer)
        return True if asked is None else min(asked, RETRY_WAIT_MAX_S)
    # the connection failed, dropped or timed out; not a URL httpx cannot send to, nor a bug of the request
    return isinstance(
        exc, httpx.TimeoutException | httpx.NetworkError | httpx.RemoteProtocolError | httpx.ProxyError
    )


def _retry_after(answer) -> float | None:
    value = answer.headers.get("retry-after", "").strip()
    try:
        seconds = float(value)
    except ValueError:
        return None  # absent, or an HTTP date: the exponential backoff applies
    return seconds if 0 <= seconds < float("inf") else None


def _say_retry(details, policy: RetryPolicy) -> None:
    cause = details.caused_by
    why = str(cause) if isinstance(cause, RetryableAnswer) else f"{type(cause).__name__}: {cause}"
    typer.echo(
        f"retrying in {details.wait_for:.1f} s (try {details.retry_num + 1} of {policy.attempts}): {why}",
        err=True,
    )


def _after(tries: int) -> str:
    return f" (after {tries} tries)" if tries > 1 else ""


def _send(client, endpoint: str, run, fields: dict[str, str]):
    with ExitStack() as stack:
        files = [
            (part, (path.name, stack.enter_context(path.open("rb")), "application/octet-stream"))
            for part, path in run.parts()
        ]
        return client.post(endpoint, data={k: v for k, v in fields.items() if v}, files=files)


# asv's result statuses (tewatch.store.models.ResultStatus), in words that cannot be read as verdicts:
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

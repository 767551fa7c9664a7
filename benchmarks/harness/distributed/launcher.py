"""Run a function on `world_size` ranks, one spawned process per rank, and collect what each returns.

The parent hosts the rendezvous (a TCPStore on a free loopback port, chosen by the kernel, so two
launches never race for a port) and keeps a deadline: ranks still running when it passes are killed and
the launch is a `timeout`, so a hung collective never hangs the benchmark that started it. When a rank
fails, the others usually block in their next collective; they get `grace_s` to finish, then are killed.

Each rank runs in its own process group (killing it also ends the compile workers it started) and
writes its result to a JSON file: {"status": "ok", "report": {...}} or the exception it raised (with
the `phase` attribute the rank function may set on it, to say what it was doing). This
module imports torch only inside functions: a rank must reach its process-group call quickly.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from benchmarks.harness import records
from benchmarks.harness.distributed.environment import apply_no_multicast

LOOPBACK = "127.0.0.1"
PROJECT_ROOT = Path(__file__).resolve().parents[3]
RankFunction = Callable[[int, int, Any], dict[str, Any]]


@dataclass
class RankResult:
    rank: int
    status: str  # ok | error | oom | crashed | killed | no_report
    exitcode: int | None
    report: dict[str, Any] | None = None
    error: dict[str, Any] | None = None  # exception_class, message, traceback_head, phase, at


@dataclass
class LaunchOutcome:
    status: str  # ok | error | timeout
    ranks: list[RankResult]
    wall_seconds: float
    message: str = ""
    failed_rank: int | None = None
    reports: list[dict[str, Any]] = field(default_factory=list)

    def failure(self) -> RankResult | None:
        return None if self.failed_rank is None else self.ranks[self.failed_rank]


def _write_json(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, default=str))
    os.replace(tmp, path)


def _rank_main(
    rank: int,
    world_size: int,
    device: str,
    port: int,
    collective_timeout_s: float,
    fn: RankFunction,
    payload: Any,
    out_dir: str,
) -> None:
    os.setpgrp()
    apply_no_multicast()
    out = Path(out_dir) / f"rank-{rank}.json"
    try:
        import torch
        import torch.distributed as dist

        timeout = timedelta(seconds=collective_timeout_s)
        store = dist.TCPStore(LOOPBACK, port, None, False, timeout=timeout)
        options: dict[str, Any] = {}
        if device == "cuda":
            torch.cuda.set_device(rank)
            options["device_id"] = torch.device("cuda", rank)
        else:
            torch.set_num_threads(max(1, (os.cpu_count() or 1) // world_size))
        dist.init_process_group(
            "nccl" if device == "cuda" else "gloo",
            store=store,
            rank=rank,
            world_size=world_size,
            timeout=timeout,
            **options,
        )
    except Exception as exc:  # whatever a rank raises is reported
        _write_json(out, {"status": "error", "error": _error(exc, "rendezvous")})
        raise SystemExit(1) from None
    try:
        report = fn(rank, world_size, payload)
        _write_json(out, {"status": "ok", "report": report})
    except Exception as exc:  # whatever a rank raises is reported
        _write_json(out, {"status": "error", "error": _error(exc, getattr(exc, "phase", "run"))})
        raise SystemExit(1) from None
    finally:
        dist.destroy_process_group()


def _error(exc: BaseException, phase: str) -> dict[str, Any]:
    check = records.from_exception(phase, exc)
    return {
        "status": check.status,
        "exception_class": check.exception_class,
        "message": check.message,
        "traceback_head": check.traceback_head,
        "phase": phase,
        "at": time.time(),
    }


def _kill(process: Any) -> None:
    """SIGKILL the rank's process group (itself and its compile workers), or the rank alone."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        if process.is_alive():
            process.kill()


def _read(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return None


def launch(
    fn: RankFunction,
    payload: Any,
    world_size: int,
    device: str,
    deadline_s: float,
    grace_s: float = 10.0,
    collective_timeout_s: float = 120.0,
    poll_s: float = 0.05,
) -> LaunchOutcome:
    """Run fn(rank, world_size, payload) on every rank; fn must be a module-level function."""
    import torch.distributed as dist
    import torch.multiprocessing as mp

    if world_size < 1:
        raise ValueError(f"world_size must be at least 1, not {world_size}")
    if device == "cuda":
        import torch

        if torch.cuda.device_count() < world_size:
            raise ValueError(
                f"{world_size} ranks need {world_size} GPUs; {torch.cuda.device_count()} visible"
            )
    apply_no_multicast()
    if str(PROJECT_ROOT) not in sys.path:  # spawned children import fn by module name from sys.path
        sys.path.insert(0, str(PROJECT_ROOT))
    started = time.monotonic()
    store = dist.TCPStore(
        LOOPBACK, 0, None, True, timeout=timedelta(seconds=collective_timeout_s), wait_for_workers=False
    )
    ctx = mp.get_context("spawn")
    with tempfile.TemporaryDirectory(prefix="tewatch-ranks-") as tmp:
        out_dir = Path(tmp)
        files = [out_dir / f"rank-{r}.json" for r in range(world_size)]
        procs = [
            ctx.Process(
                target=_rank_main,
                name=f"tewatch-rank-{r}",
                args=(r, world_size, device, store.port, collective_timeout_s, fn, payload, tmp),
            )
            for r in range(world_size)
        ]
        timed_out = False
        try:
            for p in procs:
                p.start()
            deadline = started + deadline_s
            first_failure: float | None = None
            while any(p.is_alive() for p in procs):
                now = time.monotonic()
                if first_failure is None and any(
                    (not p.is_alive() and p.exitcode != 0) or (_read(f) or {}).get("status") == "error"
                    for p, f in zip(procs, files, strict=True)
                ):
                    first_failure = now
                if first_failure is not None and now - first_failure > grace_s:
                    break
                if now > deadline:
                    timed_out = True
                    break
                time.sleep(poll_s)
        finally:  # also when a rank could not be started: the others stop, the start's error stands
            alive = [p.is_alive() for p in procs]
            started_procs = [p for p in procs if p.pid is not None]
            for p in started_procs:
                _kill(p)
            for p in started_procs:
                p.join(timeout=10)
            del store
        ranks = [
            _rank_result(r, p, _read(f), was_alive)
            for r, (p, f, was_alive) in enumerate(zip(procs, files, alive, strict=True))
        ]
    return _outcome(ranks, timed_out, time.monotonic() - started, deadline_s)


def _rank_result(rank: int, process: Any, data: dict[str, Any] | None, was_alive: bool) -> RankResult:
    code = process.exitcode
    if data and data.get("status") == "ok":
        return RankResult(rank, "ok", code, report=data["report"])
    if data and data.get("status") == "error":
        error = data["error"]
        return RankResult(rank, "oom" if error.get("status") == "oom" else "error", code, error=error)
    if was_alive:
        return RankResult(rank, "killed", code)
    return RankResult(rank, "crashed" if code else "no_report", code)


def _outcome(ranks: list[RankResult], timed_out: bool, wall: float, deadline_s: float) -> LaunchOutcome:
    crashed = [r for r in ranks if r.status == "crashed"]
    if crashed:  # its peers' errors (connection closed) are echoes of it
        first = crashed[0]
        return LaunchOutcome(
            "error",
            ranks,
            wall,
            failed_rank=first.rank,
            message=f"rank {first.rank} exited with status {first.exitcode} without a report",
        )
    raised = [r for r in ranks if r.error is not None]
    if raised:
        first = min(raised, key=lambda r: (r.error or {}).get("at", 0.0))  # the cause, not the echoes
        assert first.error is not None
        return LaunchOutcome(
            "error",
            ranks,
            wall,
            failed_rank=first.rank,
            message=f"rank {first.rank}: {first.error['exception_class']}: {first.error['message']}",
        )
    if timed_out:
        stuck = [r.rank for r in ranks if r.status == "killed"]
        return LaunchOutcome(
            "timeout",
            ranks,
            wall,
            message=f"rank(s) {stuck} still running after the {deadline_s:g} s deadline "
            "(a collective that never completes?); killed",
        )
    broken = [r for r in ranks if r.status != "ok"]
    if broken:
        first = broken[0]
        return LaunchOutcome(
            "error",
            ranks,
            wall,
            failed_rank=first.rank,
            message=f"rank {first.rank} ended ({first.status}) without a report",
        )
    return LaunchOutcome("ok", ranks, wall, reports=[r.report for r in ranks if r.report is not None])

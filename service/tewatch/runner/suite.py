"""Run the suites once: probe, machine keys, `asv run`, re-file under TE's commit, close the sidecar."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tewatch.core import stderr_log_file
from tewatch.runner import machine, results, sidecar
from tewatch.runner.commit import choose_commit

ASV_DROPPED_ENV = ("PYTHONPATH", "ASV_PYTHONPATH")
# benchmarks/harness/preload.py's protocol (the runner never imports the suites)
PRELOAD_ENV = "TEWATCH_PRELOAD"
FORK_SAFE_ENV = {"PYTORCH_NVML_BASED_CUDA_CHECK": "1"}

PROFILES = ("full", "quick", "ci")
LAUNCH_METHODS = ("spawn", "forkserver")
BACKENDS = ("te", "te-ref", "torch-ref")
_PERCENT = re.compile(r"^\s*\[\s*(\d+(?:\.\d+)?)%\]\s*(.*)$")


class RunError(Exception):
    """asv itself could not run (not: some cases failed, which is data)."""


@dataclass
class RunOptions:
    project: Path
    profile: str = "full"
    backends: tuple[str, ...] | None = None
    bench: str | None = None
    machine: str | None = None
    results_dir: Path | None = None
    commit: str | None = None
    python: str = sys.executable
    extra_env: dict[str, str] = field(default_factory=dict)
    launch_method: str | None = None  # None: forkserver where the probe's fork check passed
    append_samples: bool = False  # keep the samples already stored under the commit (A/B rounds)

    def asv_launch_method(self, fork: dict[str, Any]) -> str:
        """asv's forkserver imports the suites, torch and TE once and forks a child per case; on a GPU
        only where the probe's fork check passed (see benchmarks/harness/preload.py), else spawn."""
        if self.launch_method:
            return self.launch_method
        return "forkserver" if self.profile == "ci" or fork.get("safe") else "spawn"

    def validate(self) -> None:
        if self.profile not in PROFILES:
            raise RunError(f"--profile must be one of {', '.join(PROFILES)}, not {self.profile!r}")
        if self.launch_method not in (None, *LAUNCH_METHODS):
            raise RunError(
                f"--launch-method must be one of {', '.join(LAUNCH_METHODS)}, not {self.launch_method!r}"
            )
        unknown = [b for b in self.backends or () if b not in BACKENDS]
        if unknown:
            raise RunError(f"--backends has unknown {', '.join(unknown)}; known: {', '.join(BACKENDS)}")
        if not (self.project / "asv.conf.json").is_file():
            raise RunError(f"{self.project} has no asv.conf.json")


@dataclass
class RunOutcome:
    results_file: Path
    sidecar: Path
    asv_exit_code: int
    commit: str
    commit_source: str
    counts: dict[str, int]  # verdict status -> cases
    wall_seconds: float
    written_for_failures: dict[str, int] = field(default_factory=dict)  # records tewatch run wrote or amended


def load_asv_config(project: Path) -> dict[str, Any]:
    import json5  # asv's own config parser (the file allows comments)

    return json5.loads((project / "asv.conf.json").read_text())


def default_results_dir(project: Path) -> Path:
    """asv.conf.json's results folder."""
    return project / load_asv_config(project)["results_dir"]


def _write_config(opts: RunOptions, results_dir: Path) -> Path:
    """asv.conf.json with absolute paths and the chosen results folder, for `asv --config`."""
    conf = load_asv_config(opts.project)
    for key in ("repo", "benchmark_dir", "env_dir", "html_dir"):
        if key in conf:
            conf[key] = str((opts.project / conf[key]).resolve())
    conf["results_dir"] = str(results_dir)
    path = results_dir / ".tewatch-asv.conf.json"
    path.write_text(json.dumps(conf, indent=1))
    return path


def probe(opts: RunOptions, env: dict[str, str], *args: str) -> dict[str, Any]:
    """What the cases will see. asv starts every benchmark process without PYTHONPATH (and its
    benchmark.py takes those folders off sys.path), so the probe runs without it too: a TE found only
    through PYTHONPATH is not the cases' TE, and must not name the commit they are filed under."""
    proc = subprocess.run(
        [opts.python, "-m", "benchmarks.harness.probe", *args],
        cwd=opts.project,
        env={name: value for name, value in env.items() if name not in ASV_DROPPED_ENV},
        capture_output=True,
        text=True,
        timeout=300,
    )
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise RunError(f"the probe failed in {opts.python}: {last}")
    return json.loads(proc.stdout)


def missing_te_warning(info: dict[str, Any], opts: RunOptions) -> str | None:
    """Said before the cases run: on a GPU without an importable TE every te and te-ref case errors."""
    if not info.get("te_error") or not set(opts.backends or BACKENDS) - {"torch-ref"}:
        return None
    return (
        f"warning: Transformer Engine does not import in {opts.python} as asv starts the cases "
        f"({info['te_error']}): the te and te-ref cases will be errors"
    )


def gpu_state_now(opts: RunOptions, env: dict[str, str]) -> dict[str, Any]:
    """NVML's reading after the cases, without the preload that importing the suites would do."""
    return probe(opts, {k: v for k, v in env.items() if k != PRELOAD_ENV}, "--state")["gpu_state"]


def _git_head(project: Path) -> str:
    proc = subprocess.run(["git", "rev-parse", "HEAD"], cwd=project, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RunError(f"{project} is not a git checkout (asv needs one): {proc.stderr.strip()}")
    return proc.stdout.strip()


def _asv(opts: RunOptions, args: list[str], env: dict[str, str], **kw: Any) -> subprocess.CompletedProcess:
    return subprocess.run([opts.python, "-m", "asv", *args], cwd=opts.project, env=env, **kw)


def _asv_run(
    opts: RunOptions, args: list[str], env: dict[str, str], progress: Callable[[float, str], None] | None
) -> tuple[int, str]:
    """`asv run` with its output followed for progress; (exit code, output).

    asv runs in a session of its own, so that an interrupt reaches it from us alone: we pass it on and
    wait, while asv stops the case processes it started (each in a process group of its own), so that
    none of them writes a record after the interrupted run is cleaned up."""
    log_lines: list[str] = []
    with subprocess.Popen(
        [opts.python, "-m", "asv", *args],
        cwd=opts.project,
        env=env,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        bufsize=1,
        start_new_session=True,
    ) as asv_proc:
        assert asv_proc.stdout is not None
        try:
            for line in asv_proc.stdout:
                log_lines.append(line)
                match = _PERCENT.match(line)
                if match and progress:
                    progress(float(match.group(1)), match.group(2).strip())
        except BaseException:
            _stop(asv_proc)
            raise
    return asv_proc.returncode, "".join(log_lines)


def _stop(asv_proc: subprocess.Popen, grace_s: float = 10.0) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(asv_proc.pid, signal.SIGINT)
        try:
            asv_proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            os.killpg(asv_proc.pid, signal.SIGKILL)


def _put_back(machine_dir: Path, head: str, sha: str, staging: Path) -> None:
    """Undo a run that did not finish: asv saves nothing until the end, so the earlier chunks' results go
    back under TE's commit with their records, and this run's records are dropped."""
    shutil.rmtree(staging, ignore_errors=True)
    left = results.find(machine_dir, head) if sha != head else None
    if left is not None:
        results.refile(left, sha)


def interruptible() -> None:
    """Let SIGINT stop the run even where it was started ignoring it: a shell script's background job
    (`job ... &`, `setsid bash -c ... &`) starts with SIGINT ignored, and `timeout --signal=INT` would then
    not stop the run until its SIGKILL, which loses what the put-back keeps."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.default_int_handler)


def run_suite(opts: RunOptions, progress: Callable[[float, str], None] | None = None) -> RunOutcome:
    opts.validate()
    interruptible()
    started = datetime.now(UTC)
    t0 = time.monotonic()
    results_dir = (opts.results_dir or default_results_dir(opts.project)).resolve()
    results_dir.mkdir(parents=True, exist_ok=True)

    env = dict(os.environ)
    env.update(opts.extra_env)
    env["TEWATCH_PROFILE"] = opts.profile
    if opts.backends:
        env["TEWATCH_BACKENDS"] = ",".join(opts.backends)
    else:
        env.pop("TEWATCH_BACKENDS", None)
    # one compile cache per results folder: a campaign's base and head runs each compile from cold
    env.setdefault("TORCHINDUCTOR_CACHE_DIR", str(results_dir / ".inductor-cache"))
    env["PYTHONUNBUFFERED"] = "1"
    env.update(FORK_SAFE_ENV)

    info = probe(opts, env)
    warning = missing_te_warning(info, opts)
    if warning:
        print(warning, file=sys.stderr, flush=True)
    env["TEWATCH_CAPABILITIES"] = json.dumps(info["capabilities"])
    launch_method = opts.asv_launch_method(info.get("fork", {}))
    if launch_method == "forkserver":
        env[PRELOAD_ENV] = "1"
    versions = info["versions"]
    try:
        sha, source = choose_commit(opts.commit, versions.get("te", ""), versions.get("te_commit", ""))
    except ValueError as exc:
        raise RunError(str(exc)) from exc

    machine_name = opts.machine or _default_machine_name(info)
    proc = _asv(opts, ["machine", "--yes", "--machine", machine_name], env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RunError(f"asv machine failed: {(proc.stderr or proc.stdout).strip().splitlines()[-1:]}")
    machine.add_keys(machine_name, machine.gpu_keys(info))

    head = _git_head(opts.project)
    machine_dir = results_dir / machine_name
    staging = machine_dir / f".tewatch-staging-{os.getpid()}"
    # resume a run of the same TE commit (asv merges results of one commit, e.g. split with --bench)
    previous = results.find(machine_dir, sha) if machine_dir.exists() else None
    if previous is not None and sha != head:
        previous = results.refile(previous, head)
    earlier: dict[str, Any] = {}
    if previous is not None and results.sidecar_dir(previous).exists():
        shutil.copytree(results.sidecar_dir(previous) / "cases", staging / "cases", dirs_exist_ok=True)
        earlier = sidecar.read_run_json(results.sidecar_dir(previous))
    env["TEWATCH_RECORD_DIR"] = str(staging)
    staging.mkdir(parents=True, exist_ok=True)

    config = _write_config(opts, results_dir)
    args = [
        "--config",
        str(config),
        "run",
        "--python=same",
        f"--set-commit-hash={head}",
        f"--machine={machine_name}",
        "-e",
        "--record-samples",
        f"--launch-method={launch_method}",
    ]
    if opts.bench:
        args += ["--bench", opts.bench]
    if opts.append_samples:
        args.append("--append-samples")
    try:
        exit_code, log = _asv_run(opts, args, env, progress)
    except BaseException:  # interrupted (a time limit's SIGINT): the earlier chunks stay as they were
        _put_back(machine_dir, head, sha, staging)
        raise

    produced = results.find(machine_dir, head)
    if produced is None:
        (results_dir / "asv-stderr.log").write_text(log)
        tail = [ln for ln in log.strip().splitlines() if ln.strip()][-1:] or ["no output"]
        raise RunError(f"asv run (exit {exit_code}) wrote no results: {tail[0].strip()}")

    final = results.refile(produced, sha) if sha != head else produced
    side = results.sidecar_dir(final)
    side.mkdir(exist_ok=True)
    if (side / "cases").exists():
        shutil.rmtree(side / "cases")
    staged_cases = staging / "cases"
    staged_cases.mkdir(parents=True, exist_ok=True)
    staged_cases.rename(side / "cases")
    shutil.rmtree(staging, ignore_errors=True)
    stderr_log_file.append(side, log)

    benchmarks = results.load(results_dir / "benchmarks.json")
    case_results = list(results.iter_case_results(results.load(final), benchmarks))
    added = sidecar.complete_records(side / "cases", case_results, log)
    finished = datetime.now(UTC)
    wall = time.monotonic() - t0
    run = {
        "profile": opts.profile,
        "backend_filter": ",".join(opts.backends) if opts.backends else None,
        "bench_filter": opts.bench,
        "started_at": sidecar.utc(started),
        "finished_at": sidecar.utc(finished),
        "wall_seconds": round(wall, 3),
        "asv_exit_code": exit_code,
        "launch_method": launch_method,
        "fork_check": info.get("fork"),
        "commit": sha,
        "commit_source": source,
        "versions": versions,
        "gpu": info["gpu"],
        "capabilities": info["capabilities"],
        "gpu_state_before": info["gpu_state"],
        "gpu_state_after": gpu_state_now(opts, env) if info["gpu"].get("model") != "cpu" else {},
    }
    sidecar.write_run_json(side, sidecar.merge_runs(earlier, run) if earlier else run)
    return RunOutcome(
        final,
        side,
        exit_code,
        sha,
        source,
        _verdict_counts(side / "cases"),
        wall,
        {k: v for k, v in added.items() if v},
    )


def _verdict_counts(cases: Path) -> dict[str, int]:
    counts: dict[str, int] = {}
    for path in cases.glob("*.json"):
        status = json.loads(path.read_text())["verdict"]["status"]
        counts[status] = counts.get(status, 0) + 1
    return counts


def _default_machine_name(info: dict[str, Any]) -> str:
    import socket

    model = str(info["gpu"].get("model") or "cpu").replace("NVIDIA ", "").lower()
    return f"{socket.gethostname()}-{re.sub(r'[^a-z0-9]+', '-', model).strip('-')}"

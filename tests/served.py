"""`tewatch serve` processes forked from one that has imported the service already.

Starting `tewatch serve` in a fresh interpreter spends some 4 s of CPU importing the service (FastAPI,
SQLAlchemy, scipy, matplotlib) before it listens; the tests start it over a hundred times. Here a
multiprocessing forkserver, started once per test process, imports it once, and each server is a fork
of it that runs the command line as `tewatch serve` would: the same argument parsing, migrations,
app and uvicorn, in a process of its own with its own pid, port, environment, working folder and log,
killed and waited for as a subprocess is. campaign's service_process starts `tewatch serve` in a fresh
interpreter, so that path stays tested.

`run_cli` runs any other `tewatch` command the same way, as subprocess.run would run it in a fresh
interpreter: its own process, argument parsing, working folder, environment, stdout, stderr and exit
status. Tests of what only a fresh interpreter shows (what `tewatch` imports at start, `--help` on a
terminal of a given width) still start one.
"""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path

PRELOAD = ["tewatch.cli", "tewatch.api.app", "tewatch.api.request_head", "tewatch.store.engine.migrate"]

_context = multiprocessing.get_context("forkserver")
_context.set_forkserver_preload(PRELOAD)


def _run_cli(argv: list[str], env: dict[str, str], cwd: str, out_path: str, err_path: str | None) -> None:
    """The forked child: stdout to `out_path`, stderr to `err_path` (None: to `out_path` as well), then
    the command line with `env` as environment and `cwd` as working folder."""
    out = os.open(out_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    err = out if err_path is None else os.open(err_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(out, 1)
    os.dup2(err, 2)
    os.close(out)
    if err != out:
        os.close(err)
    os.chdir(cwd)
    os.environ.clear()
    os.environ.update(env)
    from tewatch.cli import main

    sys.argv = ["tewatch", *argv]
    main()


def run_cli(
    argv: list[str],
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | Path | None = None,
    timeout: float = 600,
) -> subprocess.CompletedProcess[str]:
    """`tewatch ARGV` in a fork of the forkserver, like subprocess.run(..., capture_output=True,
    text=True, check=False): `env` (default: this process's environment) and `cwd` (default: this
    process's) are the command's, its stdout and stderr come back as text, its exit status as returncode
    (SystemExit's code; 1 and the traceback on stderr for an uncaught exception). Past `timeout` seconds it
    is killed and subprocess.TimeoutExpired raised."""
    args = ["tewatch", *argv]
    with tempfile.TemporaryDirectory(prefix="tewatch-cli-") as folder:
        out_path, err_path = os.path.join(folder, "stdout"), os.path.join(folder, "stderr")
        for path in (out_path, err_path):
            open(path, "w").close()  # empty, should the command die before it opens them
        process = _context.Process(
            target=_run_cli,
            args=(
                list(argv),
                dict(os.environ if env is None else env),
                str(cwd or os.getcwd()),
                out_path,
                err_path,
            ),
            daemon=True,
        )
        process.start()
        process.join(timeout)
        if process.exitcode is None:
            process.kill()
            process.join()
            raise subprocess.TimeoutExpired(args, timeout)
        returncode = process.exitcode
        process.close()
        with (
            open(out_path, encoding="utf-8", errors="replace") as out,
            open(err_path, encoding="utf-8", errors="replace") as err,
        ):
            return subprocess.CompletedProcess(args, returncode, out.read(), err.read())


class ServeProcess:
    """A forked `tewatch serve` with the part of subprocess.Popen's interface the tests use."""

    def __init__(self, argv: list[str], env: dict[str, str], cwd: Path, log_path: Path) -> None:
        self.args = argv
        # daemonic: one a test left running is terminated when the test process exits
        self._process = _context.Process(
            target=_run_cli, args=(argv, env, str(cwd), str(log_path), None), daemon=True
        )
        self._process.start()

    @property
    def pid(self) -> int:
        assert self._process.pid is not None
        return self._process.pid

    @property
    def returncode(self) -> int | None:
        return self._process.exitcode

    def poll(self) -> int | None:
        self._process.join(0)
        return self._process.exitcode

    def wait(self, timeout: float | None = None) -> int:
        self._process.join(timeout)
        if self._process.exitcode is None:
            raise subprocess.TimeoutExpired(self.args, timeout or 0)
        return self._process.exitcode

    def terminate(self) -> None:
        self._process.terminate()

    def kill(self) -> None:
        self._process.kill()

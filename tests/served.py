"""`tewatch serve` processes forked from one that has imported the service already.

Starting `tewatch serve` in a fresh interpreter spends some 4 s of CPU importing the service (FastAPI,
SQLAlchemy, scipy, matplotlib) before it listens; the tests start it over a hundred times. Here a
multiprocessing forkserver, started once per test process, imports it once, and each server is a fork
of it that runs the command line as `tewatch serve` would: the same argument parsing, migrations,
app and uvicorn, in a process of its own with its own pid, port, environment, working folder and log,
killed and waited for as a subprocess is. campaign's service_process starts `tewatch serve` in a fresh
interpreter, so that path stays tested.
"""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
from pathlib import Path

PRELOAD = ["tewatch.cli", "tewatch.api.app", "tewatch.api.request_head", "tewatch.store.engine.migrate"]

_context = multiprocessing.get_context("forkserver")
_context.set_forkserver_preload(PRELOAD)


def _run_cli(argv: list[str], env: dict[str, str], cwd: str, log_path: str) -> None:
    """The forked child: stdout and stderr to the log, then the command line with `env` as environment."""
    log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.close(log)
    os.chdir(cwd)
    os.environ.clear()
    os.environ.update(env)
    from tewatch.cli import main

    sys.argv = ["tewatch", *argv]
    main()


class ServeProcess:
    """A forked `tewatch serve` with the part of subprocess.Popen's interface the tests use."""

    def __init__(self, argv: list[str], env: dict[str, str], cwd: Path, log_path: Path) -> None:
        self.args = argv
        # daemonic: one a test left running is terminated when the test process exits
        self._process = _context.Process(
            target=_run_cli, args=(argv, env, str(cwd), str(log_path)), daemon=True
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

"""A real `tewatch serve` in a child process, on a free loopback port."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

from tewatch.client.api import ApiClient

START_TIMEOUT_S = 60.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class ServiceProcess:
    def __init__(self, database_url: str, log_path: Path, env: dict[str, str] | None = None) -> None:
        self.database_url = database_url
        self.log_path = log_path
        self.env = env
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._process: subprocess.Popen | None = None

    def __enter__(self) -> ServiceProcess:
        log = self.log_path.open("ab")
        command = [
            sys.executable,
            "-m",
            "tewatch",
            "serve",
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--db",
            self.database_url,
            "--log-level",
            "warning",
        ]
        # a campaign numbers its own pull requests (the A/A arm is PR+1): none of them is GitHub's
        inherited = {k: v for k, v in os.environ.items() if not k.startswith("TEWATCH_GITHUB_")}
        env = {**inherited, "TEWATCH_PUBLIC_URL": self.url, **(self.env or {})}
        self._process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
        deadline = time.monotonic() + START_TIMEOUT_S
        with ApiClient(self.url) as client:
            while time.monotonic() < deadline:
                if self._process.poll() is not None:
                    raise RuntimeError(
                        f"tewatch serve exited with {self._process.returncode}; see {self.log_path}"
                    )
                if client.healthy():
                    return self
                time.sleep(0.2)
        self.__exit__(None, None, None)
        raise RuntimeError(
            f"tewatch serve did not answer within {START_TIMEOUT_S:.0f} s; see {self.log_path}"
        )

    def __exit__(self, *exc_info: object) -> None:
        if self._process and self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()

"""How long a test's `tewatch serve` takes to answer its first health check, started in a fresh
interpreter (`python -c "from tewatch.cli import main; main()" serve ...`) or forked from the tests'
forkserver (tests/served.py), side by side in one run: wall seconds, and the CPU seconds the server
process spent until then (from /proc). Run from the repository root:

    .venv/bin/python scripts/server-start-times.py [ROUNDS]
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

import httpx  # noqa: E402

from tests.conftest import free_port  # noqa: E402
from tests.served import ServeProcess  # noqa: E402
from tewatch.store.engine.migrate import upgrade  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime


def serve_args(db_url: str, port: int) -> list[str]:
    return ["serve", "--host", "127.0.0.1", "--port", str(port), "--db", db_url, "--log-level", "warning"]


def until_healthy(url: str, alive) -> None:
    while True:
        assert alive(), "the server exited"
        try:
            if httpx.get(f"{url}/api/v1/health", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            time.sleep(0.05)


def fresh_interpreter(db_url: str, folder: Path) -> tuple[float, float]:
    port = free_port()
    started = time.monotonic()
    with (folder / "fresh.log").open("w") as log:
        process = subprocess.Popen(
            [sys.executable, "-c", "from tewatch.cli import main; main()", *serve_args(db_url, port)],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    until_healthy(f"http://127.0.0.1:{port}", lambda: process.poll() is None)
    wall, cpu = time.monotonic() - started, cpu_seconds(process.pid)
    process.terminate()
    process.wait(30)
    return wall, cpu


def forked(db_url: str, folder: Path) -> tuple[float, float]:
    port = free_port()
    started = time.monotonic()
    process = ServeProcess(serve_args(db_url, port), dict(os.environ), folder, folder / "forked.log")
    until_healthy(f"http://127.0.0.1:{port}", lambda: process.poll() is None)
    wall, cpu = time.monotonic() - started, cpu_seconds(process.pid)
    process.terminate()
    process.wait(30)
    return wall, cpu


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    folder = Path(tempfile.mkdtemp(prefix="tewatch-start-"))
    db_url = f"sqlite:///{folder / 'tewatch.sqlite3'}"
    upgrade(db_url)
    forked(db_url, folder)  # starts the forkserver, which imports the service once
    times: dict[str, list[tuple[float, float]]] = {"fresh interpreter": [], "forked": []}
    for _ in range(rounds):  # alternated, so that both see the same load
        times["fresh interpreter"].append(fresh_interpreter(db_url, folder))
        times["forked"].append(forked(db_url, folder))
    print(
        f"{'start':<18} {'wall s (median)':>16} {'CPU s (median)':>15}   ({rounds} rounds, load {os.getloadavg()[0]:.1f})"
    )
    for name, samples in times.items():
        wall = statistics.median(w for w, _ in samples)
        cpu = statistics.median(c for _, c in samples)
        print(f"{name:<18} {wall:>16.2f} {cpu:>15.2f}")


if __name__ == "__main__":
    main()

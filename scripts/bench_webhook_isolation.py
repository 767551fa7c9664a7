"""How long a healthy webhook receiver waits for its events beside one that trickles its answer a byte
every 2 s, against a real `tewatch serve` (SQLite): with the worker sending one delivery at a time
(TEWATCH_WEBHOOK_PARALLEL=1, how deliveries went before) and with its default of one in flight per
subscription, each delivery ending by a 10 s deadline. Prints, per configuration, the healthy receiver's
wait from the events' commit to their arrival (median and max) and the slow receiver's connections.

    .venv/bin/python scripts/bench_webhook_isolation.py [--events 3]
"""

from __future__ import annotations

import argparse
import json
import secrets
import socket
import statistics
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
from rich.console import Console
from rich.table import Table
from sqlalchemy.orm import Session

from tewatch.alerts.events import EventType, emit
from tewatch.campaign.service_process import ServiceProcess
from tewatch.store.engine.database import make_engine
from tewatch.store.engine.migrate import upgrade
from tewatch.store.schema.models import TokenScope
from tewatch.store.writes.tokens import create_token

DEADLINE_S = 10
TRICKLE_S = 2.0


class Healthy:
    """Answers 204 at once and notes when each event arrived."""

    def __init__(self) -> None:
        self.arrived: dict[str, float] = {}
        arrived = self.arrived

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                arrived[json.loads(body)["id"]] = time.monotonic()
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class Trickling:
    """Reads a request, then answers a byte every TRICKLE_S seconds, never finishing."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}/hook"
        self.connections = 0
        self.stopped = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._trickle, args=(conn,), daemon=True).start()

    def _trickle(self, conn: socket.socket) -> None:
        with conn:
            try:
                conn.recv(65536)
                for byte in b"HTTP/1.1 200 OK\r\nX-Slow: " + b"a" * 10_000:
                    if self.stopped.wait(TRICKLE_S):
                        return
                    conn.sendall(bytes([byte]))
            except OSError:
                return

    def close(self) -> None:
        self.stopped.set()
        self.listener.close()


def measure(folder: Path, parallel: int, with_slow: bool, events: int) -> dict:
    url = f"sqlite:///{folder / f'p{parallel}-{with_slow}.sqlite3'}"
    upgrade(url)
    engine = make_engine(url)
    token = create_token(engine, "bench", TokenScope.admin)
    env = {
        "TEWATCH_WEBHOOK_ALLOW_LOOPBACK": "true",
        "TEWATCH_WEBHOOK_PARALLEL": str(parallel),
        "TEWATCH_WEBHOOK_DEADLINE_SECONDS": str(DEADLINE_S),
        "TEWATCH_WEBHOOK_POLL_SECONDS": "0.2",
        "TEWATCH_DETECT_AFTER_UPLOAD": "false",
    }
    healthy, slow = Healthy(), Trickling()
    try:
        with ServiceProcess(url, folder / "service.log", env) as service:
            hook = {"secret": secrets.token_hex(16), "event_types": ["correctness.failed"]}
            with httpx.Client(base_url=service.url, headers={"Authorization": f"Bearer {token}"}) as client:
                for receiver in [slow] * with_slow + [healthy]:
                    client.post("/api/v1/webhooks", json={**hook, "url": receiver.url}).raise_for_status()
            with Session(engine) as session, session.begin():
                ids = [emit(session, EventType.correctness_failed, {"n": n}).id for n in range(events)]
            committed = time.monotonic()
            deadline = committed + events * (DEADLINE_S + 5) * 2 + 60
            while len(healthy.arrived) < events and time.monotonic() < deadline:
                time.sleep(0.05)
            waits = [healthy.arrived[i] - committed for i in ids if i in healthy.arrived]
    finally:
        healthy.close()
        slow.close()
        engine.dispose()
    return {
        "arrived": len(waits),
        "median": statistics.median(waits) if waits else float("nan"),
        "max": max(waits) if waits else float("nan"),
        "slow connections": slow.connections,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=3)
    args = parser.parse_args()
    table = Table(
        "worker",
        "beside",
        "events arrived",
        "healthy wait p50 (s)",
        "healthy wait max (s)",
        "slow receiver's connections",
        title=f"healthy receiver's wait, {args.events} events; deliveries end by {DEADLINE_S} s",
    )
    with tempfile.TemporaryDirectory(prefix="tewatch-webhooks-") as tmp:
        for parallel, with_slow in [(1, False), (1, True), (8, False), (8, True)]:
            row = measure(Path(tmp), parallel, with_slow, args.events)
            table.add_row(
                "one delivery at a time" if parallel == 1 else f"{parallel} in flight, one per subscription",
                "a receiver trickling a byte every 2 s" if with_slow else "nothing",
                f"{row['arrived']} of {args.events}",
                f"{row['median']:.2f}",
                f"{row['max']:.2f}",
                str(row["slow connections"]) if with_slow else "-",
            )
    Console(width=160).print(table)


if __name__ == "__main__":
    main()

"""A real HTTP receiver on loopback: records what arrives, verifies signatures, can fail on purpose."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Self

from tewatch.alerts.signing import DELIVERY_HEADER, EVENT_HEADER, SIGNATURE_HEADER, verify


@dataclass
class Received:
    delivery_id: str
    event_type: str
    event_id: str
    body: bytes
    signature_ok: bool
    answered: int


class Receiver:
    def __init__(self, secret: str, port: int = 0, fail_first: int = 0, delay: float = 0.0):
        self.secret = secret
        self.fail_first = fail_first
        self.delay = delay
        self.received: list[Received] = []
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                if receiver.delay:
                    time.sleep(receiver.delay)
                with receiver.lock:
                    failing = receiver.fail_first > 0
                    receiver.fail_first -= failing
                    code = 503 if failing else 200
                    receiver.received.append(
                        Received(
                            self.headers[DELIVERY_HEADER],
                            self.headers[EVENT_HEADER],
                            json.loads(body)["id"],
                            body,
                            verify(receiver.secret, body, self.headers[SIGNATURE_HEADER]),
                            code,
                        )
                    )
                self.send_response(code)
                self.end_headers()
                self.wfile.write(b"ok" if code == 200 else b"try later")

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/hook"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Self:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()

    def accepted(self) -> list[Received]:
        with self.lock:
            return [r for r in self.received if r.answered == 200]

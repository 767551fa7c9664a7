"""A webhook receiver on loopback that checks each signature and keeps every delivery as a file."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from tewatch.alerts.signing import DELIVERY_HEADER, EVENT_HEADER, SIGNATURE_HEADER, verify


class WebhookReceiver:
    def __init__(self, secret: str, folder: Path) -> None:
        self.secret = secret
        self.folder = folder
        self.deliveries: list[dict] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/hook"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # http.server's name
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                signed = verify(receiver.secret, body, self.headers.get(SIGNATURE_HEADER))
                receiver._keep(
                    self.headers.get(DELIVERY_HEADER, ""), self.headers.get(EVENT_HEADER, ""), signed, body
                )
                self.send_response(204 if signed else 401)
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        return Handler

    def _keep(self, delivery_id: str, event: str, signed: bool, body: bytes) -> None:
        entry = {
            "delivery_id": delivery_id,
            "event": event,
            "signature_valid": signed,
            "body": json.loads(body) if body else None,
        }
        with self._lock:
            self.deliveries.append(entry)
            index = len(self.deliveries)
        self.folder.mkdir(parents=True, exist_ok=True)
        (self.folder / f"{index:03d}-{event or 'unknown'}.json").write_text(json.dumps(entry, indent=1))

    def events(self, event_type: str) -> list[dict]:
        with self._lock:
            return [d for d in self.deliveries if d["event"] == event_type]

    def __enter__(self) -> WebhookReceiver:
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._server.shutdown()
        self._server.server_close()

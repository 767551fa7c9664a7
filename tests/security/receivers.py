"""Raw TCP peers on loopback that misbehave as a webhook receiver might: one trickles its answer a byte
at a time, one speaks something other than HTTP."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from typing import Self


class RawPeer:
    """Accepts connections on 127.0.0.1 and hands each to `serve` on a thread of its own."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}/hook"
        self.connections = 0
        self.stopped = threading.Event()

    def serve(self, conn: socket.socket) -> None:
        raise NotImplementedError

    def _accept(self) -> None:
        while not self.stopped.is_set():
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._serve_and_close, args=(conn,), daemon=True).start()

    def _serve_and_close(self, conn: socket.socket) -> None:
        with conn, contextlib.suppress(OSError):
            self.serve(conn)

    def __enter__(self) -> Self:
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopped.set()
        self.listener.close()


class TricklingReceiver(RawPeer):
    """Reads the request, then answers one byte every `interval` seconds, never finishing its headers."""

    def __init__(self, interval: float) -> None:
        super().__init__()
        self.interval = interval

    def serve(self, conn: socket.socket) -> None:
        conn.recv(65536)
        answer = b"HTTP/1.1 200 OK\r\n" + b"X-Slow: " + b"a" * 100_000
        for byte in answer:
            if self.stopped.wait(self.interval):
                return
            conn.sendall(bytes([byte]))


class NotHttp(RawPeer):
    """An open port whose service greets in its own protocol and hangs up (an SSH server, say)."""

    def serve(self, conn: socket.socket) -> None:
        conn.sendall(b"SSH-2.0-OpenSSH_9.6\r\n")
        time.sleep(0.2)

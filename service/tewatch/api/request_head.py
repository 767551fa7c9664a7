"""A deadline for each request's head. uvicorn waits for a request line and headers as long as the client
sends a byte now and then (every byte also cancels its keep-alive timer), so a client trickling a header
byte a second held a connection, and its file descriptor, indefinitely; enough of them exhaust the
process. Here a connection whose request head is not complete within `head_seconds` of the connection
(or of the previous response) is answered 408 and closed."""

from __future__ import annotations

import asyncio
from typing import ClassVar

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

TIMED_OUT = b"the request's head (request line and headers) did not arrive in time"
ANSWER = (
    b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain; charset=utf-8\r\nconnection: close\r\n"
    b"content-length: " + str(len(TIMED_OUT)).encode() + b"\r\n\r\n" + TIMED_OUT
)


class HeadDeadlineProtocol(HttpToolsProtocol):
    head_seconds: ClassVar[float] = 20.0
    _head_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._start_head_timer()

    def on_headers_complete(self) -> None:
        self._stop_head_timer()
        super().on_headers_complete()

    def on_response_complete(self) -> None:
        next_head_awaited = not self.pipeline  # else a request whose head came whole starts now
        super().on_response_complete()
        if next_head_awaited and not self.transport.is_closing():
            self._start_head_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_head_timer()
        super().connection_lost(exc)

    def _start_head_timer(self) -> None:
        self._stop_head_timer()
        self._head_timer = self.loop.call_later(self.head_seconds, self._head_too_late)

    def _stop_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_too_late(self) -> None:
        if not self.transport.is_closing():
            self.transport.write(ANSWER)
            self.transport.close()


def head_deadline_protocol(seconds: float) -> type[HeadDeadlineProtocol]:
    """uvicorn's HTTP protocol (httptools) with a request head deadline of `seconds`."""
    return type("HeadDeadlineProtocol", (HeadDeadlineProtocol,), {"head_seconds": seconds})

"""The HTTP client deliveries are sent through: it connects only to addresses tewatch.alerts.destinations
allows, checked on the very addresses the connection goes to (resolved once, so no later answer of the
resolver can slip an internal address in between), one connection per delivery, and every delivery ends
by a total deadline however slowly the receiver answers (a byte every 2 s never trips a read timeout).
"""

from __future__ import annotations

import ssl
import time
from typing import Any

import httpcore
import httpx

from tewatch.alerts.destinations import checked_addresses

DEFAULT_SSL_CONTEXT = httpx.create_ssl_context()


class DeadlineStream(httpcore.NetworkStream):
    """A connection whose reads and writes all end by one deadline (time.monotonic())."""

    def __init__(self, stream: httpcore.NetworkStream, deadline: float) -> None:
        self.stream, self.deadline = stream, deadline

    def _left(self, timeout: float | None, expired: type[Exception]) -> float:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise expired("the delivery's deadline passed")
        return left if timeout is None else min(timeout, left)

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self.stream.read(max_bytes, self._left(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self.stream.write(buffer, self._left(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self.stream.close()

    def start_tls(
        self, ssl_context: ssl.SSLContext, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore.NetworkStream:
        secured = self.stream.start_tls(
            ssl_context, server_hostname, self._left(timeout, httpcore.ConnectTimeout)
        )
        return DeadlineStream(secured, self.deadline)

    def get_extra_info(self, info: str) -> Any:
        return self.stream.get_extra_info(info)


class CheckedBackend(httpcore.NetworkBackend):
    """Resolves the host once, refuses it where any address is internal, connects to a checked address."""

    def __init__(self, allow_loopback: bool, deadline_seconds: float) -> None:
        self.allow_loopback = allow_loopback
        self.deadline_seconds = deadline_seconds
        self.tcp = httpcore.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Any = None,
    ) -> httpcore.NetworkStream:
        deadline = time.monotonic() + self.deadline_seconds
        try:
            addresses = checked_addresses(host, port, self.allow_loopback)
        except (OSError, UnicodeError) as exc:
            raise httpcore.ConnectError(f"{host} does not resolve: {exc}") from exc
        failure: Exception | None = None
        for address in addresses:
            left = min(timeout or self.deadline_seconds, deadline - time.monotonic())
            if left <= 0:
                break
            try:
                stream = self.tcp.connect_tcp(str(address), port, left, local_address, socket_options)
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                failure = exc
                continue
            return DeadlineStream(stream, deadline)
        raise httpcore.ConnectError(f"could not connect to {host}: {failure or 'the deadline passed'}")

    def connect_unix_socket(self, path: str, timeout: float | None = None, socket_options: Any = None):
        raise httpcore.ConnectError("webhooks go over TCP only")


class CheckedTransport(httpx.HTTPTransport):
    def __init__(self, allow_loopback: bool, deadline_seconds: float) -> None:
        super().__init__(trust_env=False)
        # httpx builds its pool without a way to choose the network backend; this is the pool it would
        # build (no proxy: a proxy would resolve the name itself, past the check), on the checked one,
        # keeping no connection between deliveries (the deadline is a connection's)
        self._pool = httpcore.ConnectionPool(
            ssl_context=DEFAULT_SSL_CONTEXT,
            max_keepalive_connections=0,
            network_backend=CheckedBackend(allow_loopback, deadline_seconds),
        )


def webhook_client(allow_loopback: bool, timeout_seconds: float, deadline_seconds: float) -> httpx.Client:
    """`timeout_seconds` bounds each step (connect, each read, each write), `deadline_seconds` the whole
    delivery from the name's resolution to the last byte of the answer that is read."""
    return httpx.Client(
        transport=CheckedTransport(allow_loopback, deadline_seconds),
        timeout=timeout_seconds,
        follow_redirects=False,
        trust_env=False,
    )

"""Prometheus metrics of one app instance (its own registry, so several apps can live in one process)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Protocol

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from starlette.types import ASGIApp, Receive, Scope, Send


class HeldRenderings(Protocol):
    held_bytes: int

    def __len__(self) -> int: ...


class ServiceMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "tewatch_http_requests", "HTTP requests", ["method", "route", "status"], registry=self.registry
        )
        self.latency = Histogram(
            "tewatch_http_request_seconds",
            "HTTP request latency",
            ["method", "route"],
            registry=self.registry,
        )
        self.uploads = Counter(
            "tewatch_uploads", "Run uploads by outcome", ["outcome"], registry=self.registry
        )
        self.results_ingested = Counter(
            "tewatch_results_ingested", "Result rows stored by uploads", registry=self.registry
        )
        self.ingest_seconds = Histogram(
            "tewatch_ingest_seconds", "Time to parse and store one upload", registry=self.registry
        )

    def watch_page_cache(self, cache: Callable[[], HeldRenderings | None]) -> None:
        """Gauges of the rendered page contents `cache()` keeps (None until a page made it)."""

        def held_bytes() -> float:
            held = cache()
            return 0 if held is None else held.held_bytes

        def entries() -> float:
            held = cache()
            return 0 if held is None else len(held)

        Gauge(
            "tewatch_page_cache_bytes", "Memory held by kept page renderings", registry=self.registry
        ).set_function(held_bytes)
        Gauge("tewatch_page_cache_entries", "Page renderings kept", registry=self.registry).set_function(
            entries
        )


class MetricsMiddleware:
    def __init__(self, app: ASGIApp, metrics: ServiceMetrics) -> None:
        self.app, self.metrics = app, metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        status_code = 500

        async def send_wrapper(message) -> None:
            nonlocal status_code
            if message["type"] == "http.response.start":
                status_code = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_wrapper)
        finally:
            route = scope.get("route")
            path = getattr(route, "path", "unmatched")
            self.metrics.requests.labels(scope["method"], path, str(status_code)).inc()
            self.metrics.latency.labels(scope["method"], path).observe(time.perf_counter() - start)

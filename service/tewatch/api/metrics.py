"""Prometheus metrics of one app instance (its own registry, so several apps can live in one process)."""

from __future__ import annotations

import time

from prometheus_client import CollectorRegistry, Counter, Histogram
from starlette.types import ASGIApp, Receive, Scope, Send


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

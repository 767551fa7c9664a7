"""Every router the app includes; another part of the service adds its own with one line."""

from fastapi import APIRouter

from tewatch.api.routes import (
    alerts,
    bisections,
    catalog,
    compare,
    detect,
    graph,
    health,
    runs,
    series,
    upload,
    verdicts,
    webhooks,
)
from tewatch_dashboards.router import router as dashboard_router

ROUTERS: list[APIRouter] = [
    health.router,
    upload.router,
    runs.router,
    catalog.router,
    graph.router,
    series.router,
    verdicts.router,
    compare.router,
    dashboard_router,
    alerts.router,
    webhooks.router,
    detect.router,
    bisections.router,
]

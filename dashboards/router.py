"""The dashboard: one APIRouter with every page, included by the service's app like any API router."""

from fastapi import APIRouter
from tewatch.dashboards.routes import alerts, cases, matrix, overview, pr, runs, series, static

router = APIRouter(include_in_schema=False)
for _module in (overview, matrix, cases, series, runs, pr, alerts, static):
    router.include_router(_module.router)

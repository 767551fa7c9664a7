"""The dashboard: one APIRouter with every page, included by the service's app like any API router."""

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import APIRouter, FastAPI

from tewatch_dashboards.routes import (
    alert_page,
    alerts,
    api_docs,
    bisections,
    cases,
    matrix,
    overview,
    pr,
    releases,
    runs,
    series,
    static,
)
from tewatch_dashboards.runtime import compile_templates, frozen_heap


@asynccontextmanager
async def lifespan(_: FastAPI) -> AsyncIterator[None]:
    compile_templates()
    with frozen_heap():
        yield


router = APIRouter(include_in_schema=False, lifespan=lifespan)
for _module in (
    overview,
    matrix,
    releases,
    cases,
    series,
    runs,
    pr,
    alerts,
    alert_page,
    bisections,
    static,
    api_docs,
):
    router.include_router(_module.router)

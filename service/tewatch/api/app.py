"""The FastAPI application factory: `tewatch.api.app:create_app`."""

from __future__ import annotations

from contextlib import asynccontextmanager

from fastapi import FastAPI

from tewatch import __version__
from tewatch.api.background import delivery_worker
from tewatch.api.errors import RefuseNul, install_error_handlers
from tewatch.api.metrics import MetricsMiddleware, ServiceMetrics
from tewatch.api.openapi_doc import install_openapi
from tewatch.api.routes import ROUTERS
from tewatch.core.settings import Settings
from tewatch.store.engine.database import make_engine


def create_app(settings: Settings | None = None) -> FastAPI:
    """The app for one database. Migrations are applied by `tewatch serve`/`tewatch db upgrade`, not here."""
    settings = settings or Settings()
    engine = make_engine(settings.database_url, settings.lock_wait_seconds, settings.database_connections)

    @asynccontextmanager
    async def lifespan(_: FastAPI):
        with delivery_worker(app):
            yield
        engine.dispose()

    app = FastAPI(
        title="tewatch",
        version=__version__,
        summary="Benchmarks and correctness verdicts of Transformer Engine's low-precision paths",
        lifespan=lifespan,
        # /docs is the dashboard's (tewatch_dashboards.routes.api_docs): Swagger UI from the package, not a CDN
        docs_url=None,
        redoc_url=None,
    )
    app.state.settings = settings
    app.state.engine = engine
    app.state.metrics = ServiceMetrics()
    app.state.metrics.watch_page_cache(lambda: getattr(app.state, "dashboard_cache", None))
    app.add_middleware(RefuseNul)
    app.add_middleware(MetricsMiddleware, metrics=app.state.metrics)
    install_error_handlers(app)
    for router in ROUTERS:
        app.include_router(router)
    install_openapi(app)
    return app

from fastapi import APIRouter, Depends, Request, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from sqlalchemy import text

from tewatch import __version__
from tewatch.api.schemas import Health
from tewatch.store.engine.migrate import current_revision
from tewatch.web.deps import read_access

router = APIRouter()


@router.get("/api/v1/health", response_model=Health, tags=["service"])
def health(request: Request) -> Health:
    engine = request.app.state.engine
    with engine.connect() as conn:
        conn.execute(text("SELECT 1"))
    return Health(
        status="ok",
        version=__version__,
        database=engine.dialect.name,
        schema_revision=current_revision(engine),
    )


@router.get("/metrics", include_in_schema=False, dependencies=[Depends(read_access)])
def metrics(request: Request) -> Response:
    """Prometheus metrics; behind a token where reads are (a scraper sends any valid token)."""
    return Response(generate_latest(request.app.state.metrics.registry), media_type=CONTENT_TYPE_LATEST)

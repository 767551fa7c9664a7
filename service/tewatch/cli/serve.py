"""`tewatch serve`: apply migrations, then run the API with uvicorn."""

from __future__ import annotations

import typer
import uvicorn

from tewatch.cli.app import app
from tewatch.cli.options import DatabaseOption, settings_for
from tewatch.store.engine.migrate import upgrade


@app.command()
def serve(
    host: str = typer.Option("127.0.0.1", help="address to listen on"),
    port: int = typer.Option(8000, help="port to listen on"),
    db: DatabaseOption = None,
    max_upload_mb: float | None = typer.Option(None, help="largest accepted upload body, in MiB"),
    log_level: str = typer.Option("info", help="uvicorn log level"),
) -> None:
    """Serve the results API (OpenAPI docs at /docs, metrics at /metrics)."""
    from tewatch.api.app import create_app
    from tewatch.api.request_head import head_deadline_protocol

    settings = settings_for(db)
    if max_upload_mb is not None:
        settings.max_upload_bytes = int(max_upload_mb * 1024 * 1024)
    upgrade(settings.database_url)
    uvicorn.run(
        create_app(settings),
        host=host,
        port=port,
        log_level=log_level,
        http=head_deadline_protocol(settings.request_head_seconds),
    )

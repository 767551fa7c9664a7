"""`tewatch db`: schema migrations and maintenance of the store."""

from __future__ import annotations

import typer
from rich.console import Console
from rich.progress import Progress

from tewatch.cli.app import app
from tewatch.cli.options import DatabaseOption, fail, settings_for

db_app = typer.Typer(help="Database schema and maintenance.", no_args_is_help=True)
app.add_typer(db_app, name="db")


@db_app.command("upgrade")
def upgrade_command(db: DatabaseOption = None, revision: str = typer.Argument("head")) -> None:
    """Apply migrations up to REVISION (default: the newest)."""
    from tewatch.store.engine.migrate import upgrade

    url = settings_for(db).database_url
    upgrade(url, revision)
    typer.echo(f"database at revision {revision}: {_redacted(url)}")


@db_app.command("current")
def current_command(db: DatabaseOption = None) -> None:
    """Print the schema revision of the database and the newest one this version knows."""
    from tewatch.store.engine.database import make_engine
    from tewatch.store.engine.migrate import current_revision, head_revision

    engine = make_engine(settings_for(db).database_url)
    typer.echo(f"current: {current_revision(engine) or 'none'}\nhead: {head_revision()}")


@db_app.command("revision")
def revision_command(
    message: str = typer.Option(..., "-m", "--message"),
    rev_id: str | None = typer.Option(None, help="revision id, e.g. 0003_something"),
    db: DatabaseOption = None,
) -> None:
    """Autogenerate a migration from the models against an up-to-date database (for developers)."""
    from alembic import command

    from tewatch.store.engine.migrate import alembic_config, upgrade

    url = settings_for(db).database_url
    upgrade(url)
    command.revision(alembic_config(url), message=message, autogenerate=True, rev_id=rev_id)


@db_app.command("reparse")
def reparse_command(db: DatabaseOption = None) -> None:
    """Re-read every stored upload from its raw files with this version's parser and report what
    would be rejected now (a dry run: nothing is written)."""
    from tewatch.ingest.errors import IngestError
    from tewatch.ingest.plan import build_plan
    from tewatch.ingest.reparse import stored_bundles
    from tewatch.ingest.storable import check_plan
    from tewatch.store.engine.database import make_engine

    engine = make_engine(settings_for(db).database_url)
    console = Console(stderr=True)
    failures = 0
    bundles = list(stored_bundles(engine))
    with Progress(console=console, transient=True) as progress:
        task = progress.add_task("re-parsing", total=len(bundles))
        for run_id, bundle in bundles:
            try:
                plan = build_plan(bundle)
                check_plan(plan)
                typer.echo(f"run {run_id}: {len(plan.results)} results, {len(plan.verdicts)} verdicts")
            except IngestError as exc:
                failures += 1
                typer.echo(f"run {run_id}: {exc}")
            progress.advance(task)
    if failures:
        raise fail(f"{failures} of {len(bundles)} stored uploads no longer parse")


def _redacted(url: str) -> str:
    from sqlalchemy.engine import make_url

    return make_url(url).render_as_string(hide_password=True)

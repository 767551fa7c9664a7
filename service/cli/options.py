"""Options shared by several subcommands."""

from __future__ import annotations

from typing import Annotated

import typer

from tewatch.core.settings import Settings

DatabaseOption = Annotated[
    str | None,
    typer.Option(
        "--db",
        help="database URL (sqlite:///path or postgresql://user:pw@host/db); "
        "default: $TEWATCH_DATABASE_URL, else ./tewatch.sqlite3",
        show_default=False,
    ),
]


def settings_for(db: str | None) -> Settings:
    return Settings(database_url=db) if db else Settings()


def fail(message: str, code: int = 1) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(code)

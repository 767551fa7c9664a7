"""Options shared by several subcommands."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any

import typer
from pydantic import ValidationError

from tewatch.core.settings import Settings

if TYPE_CHECKING:
    from sqlalchemy import Engine

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
    """The settings, or one line naming what is wrong with them."""
    try:
        return Settings(database_url=db) if db else Settings()
    except ValidationError as exc:
        problems = "; ".join(_problem(e) for e in exc.errors())
        raise fail(f"bad configuration: {problems}") from None


def _problem(error: Mapping[str, Any]) -> str:
    message = str(error["msg"]).removeprefix("Value error, ")
    field = ".".join(str(part) for part in error.get("loc", ()))
    return f"TEWATCH_{field.upper()}: {message}" if field else message


def fail(message: str, code: int = 1) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(code)


def migrated_engine(db: str | None) -> Engine:
    """An engine on the database `--db` names (or the settings' default), migrated to this version."""
    from tewatch.store.engine.database import make_engine
    from tewatch.store.engine.migrate import upgrade

    url = settings_for(db).database_url
    upgrade(url)
    return make_engine(url)

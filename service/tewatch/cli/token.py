"""`tewatch token`: API tokens with a scope (only their sha256 is stored)."""

from __future__ import annotations

import typer

from tewatch.cli.app import app
from tewatch.cli.options import DatabaseOption, fail, migrated_engine
from tewatch.store.schema.models import TokenScope

token_app = typer.Typer(help="API tokens: upload, triage or admin.", no_args_is_help=True)
app.add_typer(token_app, name="token")


@token_app.command("create")
def create(
    name: str = typer.Option("", "--name", help="who or what uses it"),
    scope: TokenScope = typer.Option(
        TokenScope.upload.value,
        "--scope",
        help="upload (a GPU runner), triage (alert status changes) or admin (everything, webhooks too)",
    ),
    db: DatabaseOption = None,
) -> None:
    """Create a token and print it as the last line; it cannot be shown again."""
    from tewatch.store.writes.tokens import SCOPE_RIGHTS, create_token

    token = create_token(migrated_engine(db), name, scope)
    named = f" {name!r}" if name else ""
    typer.echo(f"created {scope.value} token{named}, which may {SCOPE_RIGHTS[scope]}", err=True)
    typer.echo("store it now, it is not shown again:", err=True)
    typer.echo(token)


@token_app.command("list")
def list_tokens(db: DatabaseOption = None) -> None:
    """List tokens (ids, names, scopes, dates; never the secrets)."""
    from tewatch.store.writes.tokens import list_tokens as stored

    for row in stored(migrated_engine(db)):
        state = f"revoked {row['revoked_at']:%Y-%m-%d}" if row["revoked_at"] else "active"
        typer.echo(
            f"{row['id']}\t{row['name'] or '-'}\t{row['scope'].value}\t{row['created_at']:%Y-%m-%d %H:%M}"
            f"\t{state}"
        )


@token_app.command("revoke")
def revoke(token_id: int, db: DatabaseOption = None) -> None:
    """Revoke the token with this id."""
    from tewatch.store.writes.tokens import revoke_token

    if not revoke_token(migrated_engine(db), token_id):
        raise fail(f"no active token with id {token_id}")
    typer.echo(f"revoked token {token_id}")

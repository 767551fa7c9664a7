"""API tokens: a random secret shown once; only its sha256 is stored, with the token's scope.

Any valid token reads where reads need a token (and /metrics then); beyond reading, a scope opens:
upload: POST /api/v1/runs, /api/v1/detect, /api/v1/commits/graph (what a GPU runner sends);
triage: POST /api/v1/alerts/{id}/status;
admin: everything, webhook subscriptions and their delivery log included (a receiver's URL is often a
secret of its own)."""

from __future__ import annotations

import hashlib
import secrets
from datetime import UTC, datetime

from sqlalchemy import Connection, Engine, select, update

from tewatch.store.engine.database import write_connection
from tewatch.store.schema.models import ApiToken, TokenScope

TOKEN_PREFIX = "tw_"

# what each scope may do, in words (`tewatch token create` prints it)
SCOPE_RIGHTS = {
    TokenScope.upload: "upload runs, run detection after them, send the commit graph",
    TokenScope.triage: "acknowledge, resolve, dismiss and reopen alerts",
    TokenScope.admin: "everything: uploads, alerts, webhook subscriptions and their delivery log",
}


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def create_token(engine: Engine, name: str, scope: TokenScope) -> str:
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    with write_connection(engine) as conn:
        conn.execute(
            ApiToken.__table__.insert().values(
                name=name, token_hash=hash_token(token), scope=scope, created_at=datetime.now(UTC)
            )
        )
    return token


def token_scope(conn: Connection, token: str) -> TokenScope | None:
    """The scope of an active token; None for an unknown or revoked one."""
    return conn.execute(
        select(ApiToken.scope).where(ApiToken.token_hash == hash_token(token), ApiToken.revoked_at.is_(None))
    ).scalar_one_or_none()


def grants(scope: TokenScope, needed: TokenScope) -> bool:
    return scope is TokenScope.admin or scope is needed


def revoke_token(engine: Engine, token_id: int) -> bool:
    with write_connection(engine) as conn:
        done = conn.execute(
            update(ApiToken)
            .where(ApiToken.id == token_id, ApiToken.revoked_at.is_(None))
            .values(revoked_at=datetime.now(UTC))
        )
    return done.rowcount == 1


def list_tokens(engine: Engine) -> list[dict]:
    with engine.connect() as conn:
        rows = conn.execute(
            select(ApiToken.id, ApiToken.name, ApiToken.scope, ApiToken.created_at, ApiToken.revoked_at)
        )
        return [dict(row._mapping) for row in rows]

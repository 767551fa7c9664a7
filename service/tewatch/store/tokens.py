"""Upload tokens: a random secret shown once; only its sha256 is stored."""

from __future__ import annotations

import hashlib
import secrets
from datetime import UTC, datetime

from sqlalchemy import Connection, Engine, select, update

from tewatch.store.database import write_connection
from tewatch.store.models import ApiToken

TOKEN_PREFIX = "tw_"


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def create_token(engine: Engine, name: str = "") -> str:
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    with write_connection(engine) as conn:
        conn.execute(
            ApiToken.__table__.insert().values(
                name=name, token_hash=hash_token(token), created_at=datetime.now(UTC)
            )
        )
    return token


def token_is_valid(conn: Connection, token: str) -> bool:
    row = conn.execute(
        select(ApiToken.id).where(ApiToken.token_hash == hash_token(token), ApiToken.revoked_at.is_(None))
    ).first()
    return row is not None


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
        rows = conn.execute(select(ApiToken.id, ApiToken.name, ApiToken.created_at, ApiToken.revoked_at))
        return [dict(row._mapping) for row in rows]

"""Request dependencies: the engine, a read connection, and token checks."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated

from fastapi import Depends, HTTPException, Request, status
from sqlalchemy import Connection, Engine

from tewatch.core.settings import Settings
from tewatch.store.tokens import token_is_valid


def get_engine(request: Request) -> Engine:
    return request.app.state.engine


def get_settings(request: Request) -> Settings:
    return request.app.state.settings


def bearer_token(request: Request) -> str:
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if not header:
        raise HTTPException(
            status.HTTP_401_UNAUTHORIZED,
            "missing token: send Authorization: Bearer <token> (create one with `tewatch token create`)",
            headers={"WWW-Authenticate": "Bearer"},
        )
    if scheme.lower() != "bearer" or not token.strip():
        raise HTTPException(
            status.HTTP_401_UNAUTHORIZED,
            "malformed Authorization header: expected `Bearer <token>`",
            headers={"WWW-Authenticate": "Bearer"},
        )
    return token.strip()


def require_token(request: Request) -> None:
    token = bearer_token(request)
    with get_engine(request).connect() as conn:
        if not token_is_valid(conn, token):
            raise HTTPException(
                status.HTTP_401_UNAUTHORIZED,
                "unknown or revoked token",
                headers={"WWW-Authenticate": "Bearer"},
            )


def read_access(request: Request) -> None:
    if get_settings(request).read_token_required:
        require_token(request)


def read_connection(request: Request, _: Annotated[None, Depends(read_access)]) -> Iterator[Connection]:
    with get_engine(request).connect() as conn:
        yield conn


ReadConnection = Annotated[Connection, Depends(read_connection)]

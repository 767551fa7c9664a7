"""Request dependencies: the engine, a read connection, and token checks by scope."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Annotated

from fastapi import Depends, HTTPException, Request, status
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy import Connection, Engine

from tewatch.core.settings import Settings
from tewatch.store.schema.models import TokenScope
from tewatch.store.writes.tokens import grants, token_scope

# the OpenAPI document's security scheme (Swagger's "Authorize" sends the token from there); the header
# itself is checked below, so that its absence and its form get answers of their own
BEARER = HTTPBearer(
    scheme_name="token",
    description="`Authorization: Bearer <token>`; `tewatch token create --scope upload|triage|admin`",
    auto_error=False,
)
Credentials = Annotated[HTTPAuthorizationCredentials | None, Depends(BEARER)]


def get_engine(request: Request) -> Engine:
    return request.app.state.engine


def get_settings(request: Request) -> Settings:
    return request.app.state.settings


def _unauthorized(detail: str) -> HTTPException:
    return HTTPException(status.HTTP_401_UNAUTHORIZED, detail, headers={"WWW-Authenticate": "Bearer"})


def bearer_token(request: Request) -> str:
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if not header:
        raise _unauthorized(
            "missing token: send Authorization: Bearer <token> (create one with `tewatch token create`)"
        )
    if scheme.lower() != "bearer" or not token.strip():
        raise _unauthorized("malformed Authorization header: expected `Bearer <token>`")
    return token.strip()


def scope_of_request(request: Request) -> TokenScope:
    """The scope of the request's token; 401 when there is none, or it is unknown or revoked."""
    token = bearer_token(request)
    with get_engine(request).connect() as conn:
        scope = token_scope(conn, token)
    if scope is None:
        raise _unauthorized("unknown or revoked token")
    return scope


def require_scope(needed: TokenScope) -> Callable[[Request, Credentials], None]:
    """A dependency: a token whose scope grants `needed` (admin grants all), else 401 or 403."""

    def check(request: Request, _: Credentials) -> None:
        scope = scope_of_request(request)
        if not grants(scope, needed):
            raise HTTPException(
                status.HTTP_403_FORBIDDEN,
                f"this token's scope is {scope.value}; this needs a {needed.value} or admin token "
                f"(`tewatch token create --scope {needed.value}`)",
            )

    return check


def read_access(request: Request) -> None:
    """Reads are open unless TEWATCH_READ_TOKEN_REQUIRED: then any valid token, whatever its scope (the
    OpenAPI document declares no security on reads, which are open by default)."""
    if get_settings(request).read_token_required:
        scope_of_request(request)


def read_connection(request: Request, _: Annotated[None, Depends(read_access)]) -> Iterator[Connection]:
    with get_engine(request).connect() as conn:
        yield conn


ReadConnection = Annotated[Connection, Depends(read_connection)]
UploadScope = Depends(require_scope(TokenScope.upload))
TriageScope = Depends(require_scope(TokenScope.triage))
AdminScope = Depends(require_scope(TokenScope.admin))

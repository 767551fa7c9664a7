"""The HTTP side of the client: one httpx client, errors as one sentence, and paging."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import httpx


class ClientError(Exception):
    """The service could not be reached, or refused a request; the message says which and why."""


def _detail(answer: httpx.Response) -> str:
    """The service's own words for a refusal: its `detail`, with FastAPI's validation errors made short."""
    try:
        body = answer.json()
    except ValueError:
        return answer.text.strip()[:300] or answer.reason_phrase
    detail = body.get("detail") if isinstance(body, dict) else None
    if isinstance(detail, str):
        return detail
    if isinstance(detail, list):
        parts = []
        for error in detail:
            where = error.get("loc", [])[-1] if isinstance(error, dict) and error.get("loc") else ""
            message = error.get("msg", error) if isinstance(error, dict) else error
            parts.append(f"{where}: {message}" if where else str(message))
        return "; ".join(parts)
    return str(body)[:300]


class Http:
    def __init__(self, url: str, token: str | None, timeout: float, transport: httpx.BaseTransport | None):
        self.url = url.rstrip("/")
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._client = httpx.Client(base_url=self.url, headers=headers, timeout=timeout, transport=transport)

    def close(self) -> None:
        self._client.close()

    def get(self, path: str, params: Mapping[str, Any] | None = None) -> Any:
        query = {k: v for k, v in (params or {}).items() if v is not None}
        try:
            answer = self._client.get(path, params=query)
        except httpx.HTTPError as exc:
            # `from None`: the message says it all, httpx's own chain of tracebacks adds nothing
            raise ClientError(f"cannot reach tewatch at {self.url}: {type(exc).__name__}: {exc}") from None
        if answer.status_code >= 400:
            raise ClientError(f"GET {path} answered HTTP {answer.status_code}: {_detail(answer)}") from None
        try:
            return answer.json()
        except ValueError:
            raise ClientError(
                f"GET {path} answered {answer.headers.get('content-type', 'no content type')}, not JSON: "
                f"is {self.url} a tewatch service?"
            ) from None

    def paged(self, path: str, params: Mapping[str, Any], limit: int) -> Iterator[dict[str, Any]]:
        """Every item of a route that answers {items, total, limit, offset}, a page at a time."""
        offset = 0
        while True:
            page = self.get(path, {**params, "limit": limit, "offset": offset})
            items = page["items"]
            yield from items
            offset += len(items)
            if not items or offset >= page["total"]:
                return

    def listed(self, path: str, params: Mapping[str, Any], limit: int) -> Iterator[dict[str, Any]]:
        """Every item of a route that answers a plain list and takes limit and offset."""
        offset = 0
        while True:
            items = self.get(path, {**params, "limit": limit, "offset": offset})
            yield from items
            offset += len(items)
            if len(items) < limit:
                return

"""The one client of tewatch's JSON API: every route the CLI, the campaign and the pandas client call is
a method here, so its path is spelled once; refusals and unreachable services are one sentence
(ClientError), and uploads and the detection after them are retried by the upload policy
(tewatch.client.retries). Needs httpx and stamina only: the service's own commands use it without
pandas."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self

import httpx

from tewatch.client.retries import RetryableAnswer, RetryPolicy, retryable_status

API = "/api/v1"
UPLOAD_TIMEOUT_S = 300.0


class ClientError(Exception):
    """The service could not be reached, or refused a request; the message says which and why."""


def detail(answer: httpx.Response) -> str:
    """The service's own words for a refusal: its `detail`, with FastAPI's validation errors made short."""
    try:
        body = answer.json()
    except ValueError:
        return answer.text.strip()[:300] or answer.reason_phrase
    found = body.get("detail") if isinstance(body, dict) else None
    if isinstance(found, str):
        return found
    if isinstance(found, list):
        parts = []
        for error in found:
            where = error.get("loc", [])[-1] if isinstance(error, dict) and error.get("loc") else ""
            message = error.get("msg", error) if isinstance(error, dict) else error
            parts.append(f"{where}: {message}" if where else str(message))
        return "; ".join(parts)
    return str(body)[:300]


@dataclass(frozen=True)
class Sent:
    """One upload: the service's answer where it stored the run (`stored`), else why not (`error`)."""

    tries: int
    stored: dict[str, Any] | None = None
    error: str = ""


def _with_retries(
    policy: RetryPolicy, send: Callable[[], httpx.Response]
) -> tuple[int, httpx.Response | None, str]:
    """`send()` until an answer no retry should follow or `policy` ends the retries: (tries, that answer,
    ""), or (tries, None, why there is none)."""
    tries = 0
    try:
        for attempt in policy.attempts_of():
            with attempt:
                tries = attempt.num
                answer = send()
                if retryable_status(answer.status_code):
                    raise RetryableAnswer(answer, detail(answer))
    except RetryableAnswer as exc:
        return tries, None, str(exc)
    except httpx.HTTPError as exc:
        return tries, None, f"{type(exc).__name__}: {exc}"
    return tries, answer, ""


class Closing:
    """Closed on leaving a `with` block."""

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


class ApiClient(Closing):
    """A tewatch service at `url`; `token` for uploads, detection, webhooks, and reads where the service
    requires one."""

    def __init__(
        self,
        url: str,
        token: str | None = None,
        *,
        timeout: float = 60.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.url = url.rstrip("/")
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._client = httpx.Client(base_url=self.url, headers=headers, timeout=timeout, transport=transport)

    def close(self) -> None:
        self._client.close()

    # the HTTP ---------------------------------------------------------------------------------------------

    def _send(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        try:
            answer = self._client.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            # `from None`: the message says it all, httpx's own chain of tracebacks adds nothing
            raise ClientError(f"cannot reach tewatch at {self.url}: {type(exc).__name__}: {exc}") from None
        if answer.status_code >= 400:
            raise ClientError(
                f"{method} {path} answered HTTP {answer.status_code}: {detail(answer)}"
            ) from None
        return answer

    def _json(self, method: str, path: str, **kwargs: Any) -> Any:
        answer = self._send(method, path, **kwargs)
        try:
            return answer.json()
        except ValueError:
            raise ClientError(
                f"{method} {path} answered {answer.headers.get('content-type', 'no content type')}, not JSON: "
                f"is {self.url} a tewatch service?"
            ) from None

    def get(self, path: str, params: Mapping[str, Any] | None = None) -> Any:
        query = {k: v for k, v in (params or {}).items() if v is not None}
        return self._json("GET", path, params=query)

    def _paged(self, path: str, params: Mapping[str, Any], limit: int) -> Iterator[dict[str, Any]]:
        """Every item of a route that answers {items, total, limit, offset}, a page at a time."""
        offset = 0
        while True:
            page = self.get(path, {**params, "limit": limit, "offset": offset})
            items = page["items"]
            yield from items
            offset += len(items)
            if not items or offset >= page["total"]:
                return

    def _listed(self, path: str, params: Mapping[str, Any], limit: int) -> Iterator[dict[str, Any]]:
        """Every item of a route that answers a plain list and takes limit and offset."""
        offset = 0
        while True:
            items = self.get(path, {**params, "limit": limit, "offset": offset})
            yield from items
            offset += len(items)
            if len(items) < limit:
                return

    # reads ------------------------------------------------------------------------------------------------

    def healthy(self) -> bool:
        try:
            return self._client.get(f"{API}/health", timeout=2).is_success
        except httpx.HTTPError:
            return False

    def runs(self, params: Mapping[str, Any], page: int = 1000) -> Iterator[dict[str, Any]]:
        return self._paged(f"{API}/runs", params, page)

    def run(self, run_id: int) -> dict[str, Any]:
        return self.get(f"{API}/runs/{int(run_id)}")

    def run_results(self, run_id: int, page: int = 1000) -> Iterator[dict[str, Any]]:
        return self._paged(f"{API}/runs/{int(run_id)}/results", {}, page)

    def cases(self, params: Mapping[str, Any], page: int = 10000) -> Iterator[dict[str, Any]]:
        return self._paged(f"{API}/cases", params, page)

    def series(self, series_id: int, params: Mapping[str, Any]) -> dict[str, Any]:
        return self.get(f"{API}/series/{int(series_id)}", params)

    def series_points(self, series_id: int, params: Mapping[str, Any], most: int) -> dict[str, Any]:
        """The series with its newest `most` points, oldest first, read page by page: a page ends early
        where its samples would pass the service's budget, and names the next (`next_offset`)."""
        answer = self.series(series_id, {**params, "limit": most})
        pages = [answer["points"]]
        read = len(answer["points"])
        while answer.get("next_offset") is not None and read < most:
            answer = self.series(series_id, {**params, "offset": answer["next_offset"], "limit": most - read})
            pages.append(answer["points"])
            read += len(answer["points"])
        answer["points"] = [point for page in reversed(pages) for point in page]
        return answer

    def latest_verdicts(self, params: Mapping[str, Any]) -> list[dict[str, Any]]:
        return self.get(f"{API}/verdicts/latest", params)

    def pr_comparisons(self, pr: int) -> list[dict[str, Any]]:
        return self.get(f"{API}/prs/{int(pr)}/comparisons")

    def change_points(self, params: Mapping[str, Any], page: int = 5000) -> Iterator[dict[str, Any]]:
        return self._listed(f"{API}/detections", params, page)

    def commits(self, page: int = 1000) -> Iterator[dict[str, Any]]:
        return self._paged(f"{API}/commits", {}, page)

    def alerts(self, params: Mapping[str, Any], page: int = 1000) -> Iterator[dict[str, Any]]:
        return self._listed(f"{API}/alerts", params, page)

    def page(self, path: str) -> str:
        """A dashboard page's HTML."""
        return self._send("GET", path).text

    # writes -----------------------------------------------------------------------------------------------

    def upload(
        self,
        parts: Iterable[tuple[str, Path]],
        fields: Mapping[str, str],
        policy: RetryPolicy,
        *,
        detect: bool,
    ) -> Sent:
        """One results file with its sidecar (`parts`: form part name, file), retried as `policy` says;
        `detect` False leaves detection to a later `detect()`."""
        endpoint = f"{API}/runs" + ("" if detect else "?detect=later")
        parts = list(parts)
        tries, answer, error = _with_retries(policy, lambda: self._post_files(endpoint, parts, fields))
        if answer is None:
            return Sent(tries, error=error)
        if not answer.is_success:
            return Sent(tries, error=f"HTTP {answer.status_code}: {detail(answer)}")
        return Sent(tries, stored=answer.json())

    def _post_files(
        self, endpoint: str, parts: list[tuple[str, Path]], fields: Mapping[str, str]
    ) -> httpx.Response:
        with ExitStack() as stack:
            files = [
                (part, (path.name, stack.enter_context(path.open("rb")), "application/octet-stream"))
                for part, path in parts
            ]
            data = {k: v for k, v in fields.items() if v}
            return self._client.post(endpoint, data=data, files=files, timeout=UPLOAD_TIMEOUT_S)

    def detect(self, branch: str, run_ids: list[int], policy: RetryPolicy) -> dict[str, Any]:
        """Detection after these runs, in one pass, retried as uploads are: it only reads the runs and
        stores what it finds, so a repeat after an answer lost on the way finds nothing new."""
        path = f"{API}/detect"
        body = {"branch": branch, "runs": run_ids}
        tries, answer, error = _with_retries(
            policy, lambda: self._client.post(path, json=body, timeout=UPLOAD_TIMEOUT_S)
        )
        after = f" (after {tries} tries)" if tries > 1 else ""
        if answer is None:
            raise ClientError(f"{error}{after}")
        if answer.status_code >= 400:
            raise ClientError(f"POST {path} answered HTTP {answer.status_code}: {detail(answer)}{after}")
        return answer.json()

    def send_commit_graph(self, repo: str, commits: list[tuple[str, int, list[str]]]) -> dict[str, Any]:
        return self._json(
            "POST", f"{API}/commits/graph", json={"repo": repo, "commits": commits}, timeout=UPLOAD_TIMEOUT_S
        )

    def put_bisection(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """Store a bisection (again: the service replaces what it holds under the same question)."""
        return self._json("POST", f"{API}/bisections", json=dict(body))

    def bisections(self, alert: int | None = None) -> list[dict[str, Any]]:
        return self.get(f"{API}/bisections", {"alert": alert})

    def add_webhook(self, url: str, secret: str, event_types: list[str], description: str) -> dict[str, Any]:
        body = {"url": url, "secret": secret, "event_types": event_types, "description": description}
        return self._json("POST", f"{API}/webhooks", json=body)

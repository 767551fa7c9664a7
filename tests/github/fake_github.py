"""A local GitHub REST API for the endpoints tewatch.github calls, served by uvicorn on loopback.

Request and answer shapes follow GitHub's REST documentation:
- issue comments: https://docs.github.com/en/rest/issues/comments (list issue comments, create an issue
  comment, update an issue comment, delete an issue comment)
- commit statuses: https://docs.github.com/en/rest/commits/statuses#create-a-commit-status
- installation tokens: https://docs.github.com/en/rest/apps/apps#create-an-installation-access-token-for-an-app,
  with the JWT of https://docs.github.com/en/apps/creating-github-apps/authenticating-with-a-github-app/generating-a-json-web-token-jwt-for-a-github-app
- errors and rate limits: https://docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api
  (a secondary rate limit: 403 with `retry-after`) and
  https://docs.github.com/en/rest/using-the-rest-api/troubleshooting-the-rest-api (401 Bad credentials)
- pagination: https://docs.github.com/en/rest/using-the-rest-api/using-pagination-in-the-rest-api
"""

from __future__ import annotations

import json
import re
import secrets
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Self

import jwt
import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response

DOCS = "https://docs.github.com/rest"
SECONDARY_RATE_LIMIT = (
    "You have exceeded a secondary rate limit. Please wait a few minutes before you try "
    "again. If you reach out to GitHub Support for help, please include the request ID."
)
STATES = {"error", "failure", "pending", "success"}


@dataclass
class Fault:
    """The answer the next matching request gets instead of its own."""

    method: str
    path: str  # a regular expression over the path
    status: int
    body: dict
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    json: Any
    answered: int
    at: float


def _user(login: str, user_id: int, kind: str = "Bot") -> dict:
    base = f"https://api.github.com/users/{login}"
    return {
        "login": login,
        "id": user_id,
        "node_id": f"U_{user_id}",
        "avatar_url": f"https://avatars.example/{user_id}",
        "gravatar_id": "",
        "url": base,
        "html_url": f"https://github.com/{login}",
        "followers_url": f"{base}/followers",
        "following_url": f"{base}/following{{/other_user}}",
        "gists_url": f"{base}/gists{{/gist_id}}",
        "starred_url": f"{base}/starred{{/owner}}{{/repo}}",
        "subscriptions_url": f"{base}/subscriptions",
        "organizations_url": f"{base}/orgs",
        "repos_url": f"{base}/repos",
        "events_url": f"{base}/events{{/privacy}}",
        "received_events_url": f"{base}/received_events",
        "type": kind,
        "site_admin": False,
    }


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class FakeGitHub:
    """Repositories' issue comments and commit statuses in memory; `token` (a personal access token) or an
    App (`app_id` with `app_public_key` and `installation_id`) may call it."""

    def __init__(
        self,
        owner: str = "acme",
        repo: str = "TransformerEngine",
        token: str | None = None,
        app_id: str | None = None,
        app_public_key: str | None = None,
        installation_id: int = 0,
    ):
        self.owner, self.repo = owner, repo
        self.tokens = {token} if token else set()
        self.app_id, self.app_public_key, self.installation_id = app_id, app_public_key, installation_id
        self.comments: dict[int, list[dict]] = {}  # issue number -> comments, ascending id
        self.statuses: dict[str, list[dict]] = {}  # sha -> statuses, oldest first
        self.faults: list[Fault] = []
        self.seen: list[Seen] = []
        self.issued_tokens = 0
        self.before_create: Callable[[int], None] | None = None  # runs (issue number) as a comment is created
        self._ids = iter(range(1000, 10**9))
        self.lock = threading.Lock()
        self.app = self._routes()
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self.url = ""

    # what tests arrange and read ------------------------------------------------------------------------
    def fail_next(
        self, method: str, path: str, status: int, body: dict | None = None, **headers: str
    ) -> None:
        with self.lock:
            self.faults.append(Fault(method, path, status, body or {"message": "Server Error"}, headers))

    def add_comment(self, number: int, body: str, login: str = "octocat") -> dict:
        with self.lock:
            return self._new_comment(number, body, _user(login, 1, "User"))

    def issue_comments(self, number: int) -> list[dict]:
        with self.lock:
            return [dict(c) for c in self.comments.get(number, [])]

    def commit_statuses(self, sha: str) -> list[dict]:
        with self.lock:
            return [dict(s) for s in self.statuses.get(sha, [])]

    def requests(self, method: str | None = None, path: str = "") -> list[Seen]:
        with self.lock:
            return [
                s for s in self.seen if (method is None or s.method == method) and re.search(path, s.path)
            ]

    # the server -----------------------------------------------------------------------------------------
    def __enter__(self) -> Self:
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        config = uvicorn.Config(self.app, log_level="warning", lifespan="off")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [sock]}, daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 30
        while not self._server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("the fake GitHub did not start within 30 s")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc_info: object) -> None:
        assert self._server is not None and self._thread is not None
        self._server.should_exit = True
        self._thread.join(15)

    # GitHub's behaviour ---------------------------------------------------------------------------------
    def _new_comment(self, number: int, body: str, user: dict) -> dict:
        comment_id = next(self._ids)
        repo_api = f"https://api.github.com/repos/{self.owner}/{self.repo}"
        comment = {
            "id": comment_id,
            "node_id": f"IC_{comment_id}",
            "url": f"{repo_api}/issues/comments/{comment_id}",
            "html_url": f"https://github.com/{self.owner}/{self.repo}/pull/{number}#issuecomment-{comment_id}",
            "body": body,
            "user": user,
            "created_at": _now(),
            "updated_at": _now(),
            "issue_url": f"{repo_api}/issues/{number}",
            "author_association": "NONE",
        }
        self.comments.setdefault(number, []).append(comment)
        return comment

    def _find_comment(self, comment_id: int) -> tuple[int, dict] | None:
        for number, comments in self.comments.items():
            for comment in comments:
                if comment["id"] == comment_id:
                    return number, comment
        return None

    def _authorised(self, request: Request) -> bool:
        scheme, _, credential = request.headers.get("authorization", "").partition(" ")
        return scheme.lower() in ("token", "bearer") and credential in self.tokens

    def _app_jwt_ok(self, request: Request) -> bool:
        scheme, _, credential = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not self.app_public_key:
            return False
        try:
            claims = jwt.decode(
                credential,
                self.app_public_key,
                algorithms=["RS256"],
                leeway=60,
                options={"require": ["iat", "exp", "iss"]},
            )
        except jwt.PyJWTError:
            return False
        # at most ten minutes into the future, issued by this App
        return str(claims["iss"]) == str(self.app_id) and claims["exp"] - claims["iat"] <= 660

    def _routes(self) -> FastAPI:
        app = FastAPI()
        fake = self
        base = "/repos/{owner}/{repo}"

        def error(status: int, message: str, **extra: Any) -> JSONResponse:
            return JSONResponse({"message": message, "documentation_url": DOCS, **extra}, status)

        @app.middleware("http")
        async def faults_and_log(request: Request, call_next):
            raw = await request.body()
            with fake.lock:
                fault = next(
                    (
                        f
                        for f in fake.faults
                        if f.method == request.method and re.fullmatch(f.path, request.url.path)
                    ),
                    None,
                )
                if fault is not None:
                    fake.faults.remove(fault)
            if fault is not None:
                response: Response = JSONResponse(fault.body, fault.status, headers=fault.headers)
            else:
                response = await call_next(request)
            with fake.lock:
                fake.seen.append(
                    Seen(
                        request.method,
                        request.url.path,
                        dict(request.headers),
                        json.loads(raw) if raw else None,
                        response.status_code,
                        time.monotonic(),
                    )
                )
            return response

        def repo_checked(request: Request, owner: str, repo: str) -> JSONResponse | None:
            if not fake._authorised(request):
                return error(401, "Bad credentials")
            if (owner, repo) != (fake.owner, fake.repo):
                return error(404, "Not Found")
            return None

        @app.post("/app/installations/{installation_id}/access_tokens", status_code=201)
        async def access_token(installation_id: int, request: Request):
            if not fake._app_jwt_ok(request):
                return error(401, "A JSON web token could not be decoded")
            if installation_id != fake.installation_id:
                return error(404, "Not Found")
            token = "ghs_" + secrets.token_hex(18)
            with fake.lock:
                fake.tokens.add(token)
                fake.issued_tokens += 1
            expires = (datetime.now(UTC) + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
            return JSONResponse(
                {
                    "token": token,
                    "expires_at": expires,
                    "permissions": {"issues": "write", "pull_requests": "write", "statuses": "write"},
                    "repository_selection": "selected",
                },
                201,
            )

        @app.get(base + "/issues/{number}/comments")
        async def list_comments(
            owner: str, repo: str, number: int, request: Request, per_page: int = 30, page: int = 1
        ):
            if (refused := repo_checked(request, owner, repo)) is not None:
                return refused
            per_page = max(1, min(per_page, 100))
            with fake.lock:
                comments = list(fake.comments.get(number, []))
            chunk = comments[(page - 1) * per_page : page * per_page]
            headers = {}
            if page * per_page < len(comments):
                url = f"{fake.url}{request.url.path}?per_page={per_page}&page={page + 1}"
                headers["link"] = f'<{url}>; rel="next"'
            return JSONResponse(chunk, headers=headers)

        @app.post(base + "/issues/{number}/comments", status_code=201)
        async def create_comment(owner: str, repo: str, number: int, request: Request):
            if (refused := repo_checked(request, owner, repo)) is not None:
                return refused
            payload = await request.json()
            if not isinstance(payload.get("body"), str):
                return error(422, 'Invalid request.\n\n"body" wasn\'t supplied.')
            if fake.before_create is not None:
                fake.before_create(number)
            with fake.lock:
                comment = fake._new_comment(number, payload["body"], _user("tewatch[bot]", 41898282))
            return JSONResponse(comment, 201)

        @app.patch(base + "/issues/comments/{comment_id}")
        async def update_comment(owner: str, repo: str, comment_id: int, request: Request):
            if (refused := repo_checked(request, owner, repo)) is not None:
                return refused
            payload = await request.json()
            if not isinstance(payload.get("body"), str):
                return error(422, 'Invalid request.\n\n"body" wasn\'t supplied.')
            with fake.lock:
                found = fake._find_comment(comment_id)
                if found is None:
                    return error(404, "Not Found")
                found[1].update(body=payload["body"], updated_at=_now())
                return JSONResponse(dict(found[1]))

        @app.delete(base + "/issues/comments/{comment_id}")
        async def delete_comment(owner: str, repo: str, comment_id: int, request: Request):
            if (refused := repo_checked(request, owner, repo)) is not None:
                return refused
            with fake.lock:
                found = fake._find_comment(comment_id)
                if found is None:
                    return error(404, "Not Found")
                fake.comments[found[0]].remove(found[1])
            return Response(status_code=204)

        @app.post(base + "/statuses/{sha}", status_code=201)
        async def create_status(owner: str, repo: str, sha: str, request: Request):
            if (refused := repo_checked(request, owner, repo)) is not None:
                return refused
            payload = await request.json()
            problems = []
            if payload.get("state") not in STATES:
                problems.append(
                    {
                        "resource": "Status",
                        "code": "custom",
                        "field": "state",
                        "message": "state is not included in the list",
                    }
                )
            if len(payload.get("description") or "") > 140:
                problems.append(
                    {
                        "resource": "Status",
                        "code": "custom",
                        "field": "description",
                        "message": "description is too long (maximum is 140 characters)",
                    }
                )
            if not re.fullmatch(r"[0-9a-f]{40}", sha):
                return error(422, f"No commit found for SHA: {sha}")
            if problems:
                return error(422, "Validation Failed", errors=problems)
            with fake.lock:
                status_id = next(fake._ids)
                status = {
                    "url": f"https://api.github.com/repos/{owner}/{repo}/statuses/{sha}",
                    "avatar_url": None,
                    "id": status_id,
                    "node_id": f"SC_{status_id}",
                    "state": payload["state"],
                    "description": payload.get("description"),
                    "target_url": payload.get("target_url"),
                    "context": payload.get("context") or "default",
                    "created_at": _now(),
                    "updated_at": _now(),
                    "creator": _user("tewatch[bot]", 41898282),
                }
                fake.statuses.setdefault(sha, []).append(status)
            return JSONResponse(status, 201)

        return app

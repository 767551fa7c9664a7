"""What a failed GitHub request means for the outbox: retry (when, if GitHub said), or give up.

Retried: transport errors and timeouts, 5xx, 429, and 403s that are rate limits (primary or secondary),
after `Retry-After` or `x-ratelimit-reset` where GitHub sends them, else after at least a minute, as
GitHub's rate-limit page asks. Final: any other 4xx (bad credentials, no access, no such pull request,
a refused body), which no retry can fix.
"""

from __future__ import annotations

import json

from tewatch.alerts.outcome import Outcome

HEAD_CHARS = 500
RATE_LIMIT_WAIT_S = 60.0


def _message(text: str) -> str:
    try:
        return str(json.loads(text).get("message", ""))[:300]
    except (ValueError, AttributeError):
        return text[:300]


def outcome_of(exc: Exception) -> Outcome:
    from githubkit.exception import (
        RateLimitExceeded,
        RequestError,
        RequestFailed,
        SecondaryRateLimitExceeded,
    )

    if isinstance(exc, RequestFailed):
        response = exc.response.raw_response
        code, text = response.status_code, response.text
        where = f"{exc.request.method} {exc.request.url.path}"
        head = text[:HEAD_CHARS]
        if isinstance(exc, RateLimitExceeded):
            kind = "secondary" if isinstance(exc, SecondaryRateLimitExceeded) else "primary"
            wait = exc.retry_after.total_seconds()
            return Outcome(
                code,
                f"HTTP {code} from {where}: {kind} rate limit, retry after {wait:g} s",
                head,
                retry_after=wait,
            )
        message = _message(text)
        if code == 403 and "rate limit" in message.lower():
            return Outcome(code, f"HTTP {code} from {where}: {message}", head, retry_after=RATE_LIMIT_WAIT_S)
        retry = code >= 500 or code == 429
        return Outcome(code, f"HTTP {code} from {where}: {message}", head, final=not retry)
    if isinstance(exc, RequestError):  # the connection, a timeout: worth another try
        return Outcome(error=f"{type(exc.exc).__name__} from GitHub: {exc.exc}"[:1000])
    from githubkit.exception import AuthCredentialError

    if isinstance(exc, AuthCredentialError):
        return Outcome(error=f"GitHub credentials: {exc}", final=True)
    return Outcome(error=f"{type(exc).__name__}: {exc}"[:1000])

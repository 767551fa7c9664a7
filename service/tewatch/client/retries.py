"""When an upload is tried again: uploads are idempotent (the service keeps a content digest and answers a
repeat with the run it already stored), so a try that failed on the way, even after the service stored
it, is safe to repeat. Transport errors, timeouts, HTTP 5xx and 429 are retried with exponential backoff
and jitter (stamina), honouring Retry-After; any other answer is final."""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported where a request is made: the CLI reads the defaults below at start
    from collections.abc import Iterable

    import httpx
    import stamina

RETRY_ATTEMPTS = 5
RETRY_FOR_S = 120.0
RETRY_WAIT_S = 1.0
RETRY_WAIT_MAX_S = 30.0


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int = RETRY_ATTEMPTS
    retry_for: float = RETRY_FOR_S  # seconds after the first try past which no retry starts
    wait: float = RETRY_WAIT_S  # the first backoff, doubled each retry, plus up to this much jitter

    @property
    def wait_max(self) -> float:
        return max(self.wait, RETRY_WAIT_MAX_S)

    def backoff(self, retry: int) -> float:
        """The wait before retry `retry` (1-based): `wait` doubled each time, plus a jitter of up to `wait`,
        at most wait_max."""
        return min(self.wait * 2 ** (retry - 1) + random.uniform(0, self.wait), self.wait_max)

    def attempts_of(self) -> Iterable[stamina.Attempt]:
        """The tries, each a context manager, with the backoff between them; no retry is scheduled whose
        wait would start it past retry_for (stamina's own timeout only stops after a try that ended past
        it)."""
        import stamina

        first_try = time.monotonic()
        retries = 0

        def next_wait(exc: BaseException) -> bool | float:
            nonlocal retries
            wanted = retry_backoff(exc)
            if wanted is False:
                return False
            retries += 1
            wait = self.backoff(retries) if wanted is True else wanted
            return False if time.monotonic() - first_try + wait > self.retry_for else wait

        return stamina.retry_context(on=next_wait, attempts=self.attempts, timeout=None)


class RetryableAnswer(Exception):
    """An answer worth trying again: the service failed (5xx) or asked the client to slow down (429)."""

    def __init__(self, answer: httpx.Response, detail: str) -> None:
        super().__init__(f"HTTP {answer.status_code}: {detail}")
        self.answer = answer


def retryable_status(code: int) -> bool:
    return code == 429 or 500 <= code <= 599


def retry_backoff(exc: BaseException) -> bool | float:
    """Whether a failed try is worth another (True, or the seconds a Retry-After asks for)."""
    import httpx

    if isinstance(exc, RetryableAnswer):
        asked = retry_after(exc.answer)
        return True if asked is None else min(asked, RETRY_WAIT_MAX_S)
    # the connection failed, dropped or timed out; not a URL httpx cannot send to, nor a bug of the request
    return isinstance(
        exc, httpx.TimeoutException | httpx.NetworkError | httpx.RemoteProtocolError | httpx.ProxyError
    )


def retry_after(answer: httpx.Response) -> float | None:
    value = answer.headers.get("retry-after", "").strip()
    try:
        seconds = float(value)
    except ValueError:
        return None  # absent, or an HTTP date: the exponential backoff applies
    return seconds if 0 <= seconds < float("inf") else None

"""What the store can keep, so that ingest and the API refuse (4xx) what would fail inside a statement.

- Integer columns are 32-bit on PostgreSQL (`integer`: ids, pull request numbers, counts, ranks); SQLite
  and PostgreSQL `bigint` (offsets) and orjson (the JSON columns) stop at 64 bits.
- Text columns have lengths (PostgreSQL enforces them), and no text takes a NUL character (PostgreSQL
  refuses it) or a lone UTF-16 surrogate (not a character: it cannot be encoded as UTF-8).
- Times lie in a window far from datetime's limits (years 1 and 9999), so converting them to UTC and
  computing with them never overflows.
- JSON values are JSON: string keys, finite numbers, 64-bit integers, bounded nesting.
"""

from __future__ import annotations

import functools
import json
import math
import re
from datetime import UTC, datetime
from typing import Any

import orjson

from tewatch.core.clock import as_utc

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)
LATEST = datetime(3000, 1, 1, tzinfo=UTC)
EARLIEST_MS = 0
LATEST_MS = int(LATEST.timestamp() * 1000)
WINDOW = f"times must lie from {EARLIEST:%Y-%m-%d} to before {LATEST:%Y-%m-%d} UTC"
MAX_JSON_DEPTH = 200  # as deep as uploads parse (pydantic-core's limit), below orjson's (255)


@functools.cache  # a model attribute reads its type through a proxy, a few microseconds per value checked
def max_chars(column: Any) -> int | None:
    """The length of a String column (a model attribute such as `Machine.gpu_model`)."""
    return getattr(column.type, "length", None)


def text_problem(value: str, limit: int | None = None) -> str | None:
    """Why the store cannot keep this text, or None."""
    if "\x00" in value:
        return "contains a NUL character (U+0000), which the store cannot keep"
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            return f"contains a lone surrogate (U+{ord(value[exc.start]):04X}), which is not a character"
    if limit is not None and len(value) > limit:
        return f"is {len(value)} characters long; the store keeps at most {limit}"
    return None


def int_problem(value: int, low: int = INT32_MIN, high: int = INT32_MAX) -> str | None:
    if not low <= value <= high:
        return f"{_short(value)} is out of range: the store keeps integers from {low} to {high}"
    return None


def time_problem(value: datetime) -> str | None:
    """Why this time is out of the window, or None; a time without a zone is taken as UTC."""
    try:
        utc = as_utc(value)
    except OverflowError:
        utc = None
    if utc is None or not EARLIEST <= utc < LATEST:
        return f"{value.isoformat()} is out of range: {WINDOW}"
    return None


def epoch_ms_problem(value: int | float) -> str | None:
    """Why these milliseconds since the epoch (asv's times) are no time the store keeps, or None."""
    if isinstance(value, float) and not math.isfinite(value):
        return f"expected milliseconds since the epoch, got {value}"
    if not EARLIEST_MS <= value < LATEST_MS:
        return f"{_short(value)} ms since the epoch is out of range: {WINDOW}"
    return None


def json_problem(value: Any, max_depth: int = MAX_JSON_DEPTH) -> tuple[str, str] | None:
    """(where, why) of the first part of `value` a JSON column cannot keep, or None.

    `where` is a path such as `params.shape[2]` (empty for the value itself)."""
    if _writes_cleanly(value):
        return None
    stack: list[tuple[Any, str, int]] = [(value, "", 0)]
    while stack:
        item, where, depth = stack.pop()
        if item is None or isinstance(item, bool | datetime):  # orjson writes times as ISO 8601
            continue
        if isinstance(item, str):
            problem = text_problem(item)
        elif isinstance(item, int):
            problem = int_problem(item, INT64_MIN, INT64_MAX)
        elif isinstance(item, float):
            problem = None if math.isfinite(item) else f"{item} is not a finite number"
        elif isinstance(item, list | tuple | dict):
            if depth >= max_depth:
                return where, f"nested more than {max_depth} levels deep"
            if isinstance(item, dict):
                for key, child in item.items():
                    if not isinstance(key, str):
                        return where, f"has a key {_short(key)} that is not a string"
                    problem = text_problem(key)
                    if problem:
                        return where, f"has a key that {problem}"
                    stack.append((child, f"{where}.{key}" if where else key, depth + 1))
            else:
                stack.extend((child, f"{where}[{i}]", depth + 1) for i, child in enumerate(item))
            continue
        else:
            problem = f"a {type(item).__name__} is not a JSON value"
        if problem:
            return where, problem
    return None


# what in a JSON text can parse into a value json_problem refuses: an escape (a NUL, a lone surrogate),
# NaN or an infinity, a float beyond a double (a 3-digit exponent), an integer beyond 64 bits (19 digits or
# more not after a decimal point: a float's fraction, 0.0006292367615330028, has as many); raw NULs,
# surrogates and invalid UTF-8 the parser itself refuses
_UNSTORABLE_WORDS = (b"\\u", b"NaN", b"Infinity")
_BIG_EXPONENT = re.compile(rb"[eE][+-]?\d{3}")
_NINETEEN_DIGITS = re.compile(rb"\d{19}")


def json_text_is_storable(text: bytes) -> bool:
    """True when every value parsed from this JSON text is one a JSON column keeps, decided from the text
    alone (its brackets bound its nesting). False means: look at the parsed values (json_problem)."""
    if text.count(b"[") + text.count(b"{") >= MAX_JSON_DEPTH:
        return False
    if any(word in text for word in _UNSTORABLE_WORDS) or _BIG_EXPONENT.search(text):
        return False
    return all(text[m.start() - 1 : m.start()] == b"." for m in _NINETEEN_DIGITS.finditer(text))


def _writes_cleanly(value: Any) -> bool:
    """The common case at C speed: orjson writes it (64-bit integers, string keys, no surrogates, JSON
    types) without NULs and without a `null`; orjson writes NaN and infinities as null, so where it wrote
    one the json module looks for them (in a value free of None and non-finite numbers it need not)."""
    try:
        text = orjson.dumps(value)
    except (TypeError, ValueError, RecursionError):
        return False
    if b"\\u0000" in text:
        return False
    if b"null" in text:
        try:
            json.dumps(value, allow_nan=False, default=str)
        except (TypeError, ValueError, RecursionError):
            return False
    return True


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:20]}...{text[-8:]} ({len(text)} characters)"

"""Decode one uploaded JSON file, turning syntax errors into an IngestError with line and column."""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic_core import from_json

from tewatch.ingest.errors import IngestError

MAX_NESTING = 200  # pydantic-core's own limit
_AT_LINE = re.compile(r" at line (\d+) column (\d+)$")


def load_json(content: bytes, file: str) -> Any:
    """Parse JSON as asv writes it: bare `NaN` tokens are accepted and come back as float('nan').

    pydantic-core's parser reads large results files several times faster than the json module; what it
    refuses goes through the json module, which says where a syntax error is. What the json module takes
    but pydantic-core refuses is refused too: lone surrogate escapes (`"\\ud800"`, not a character, which
    no text column can keep), nesting more than MAX_NESTING levels deep and numbers of thousands of
    digits."""
    try:
        return from_json(content, allow_inf_nan=True)
    except ValueError as exc:
        refusal = str(exc)
    try:
        text = content.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise IngestError(f"not UTF-8 text (byte {exc.start})", file=file, status_code=400) from exc
    if not text.strip():
        raise IngestError("the file is empty", file=file, status_code=400)
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        raise IngestError(
            f"malformed JSON: {exc.msg}", file=file, line=exc.lineno, column=exc.colno, status_code=400
        ) from exc
    except RecursionError:
        raise IngestError(f"nested more than {MAX_NESTING} levels deep", file=file, status_code=400) from None
    except ValueError:  # an integer of more digits than Python converts (4300)
        pass
    raise _refused(refusal, file)


def _refused(refusal: str, file: str) -> IngestError:
    """pydantic-core's reason ("... at line L column C") as an IngestError."""
    where = _AT_LINE.search(refusal)
    line, column = (int(where.group(1)), int(where.group(2))) if where else (None, None)
    reason = refusal[: where.start()] if where else refusal
    if "recursion limit" in reason:
        message = f"nested more than {MAX_NESTING} levels deep"
    elif "surrogate" in reason or "hex escape" in reason:
        message = "a \\u escape of a lone UTF-16 surrogate, which is not a character"
    elif "number out of range" in reason:
        message = "a number with too many digits"
    else:
        message = f"refused JSON: {reason}"
    return IngestError(message, file=file, line=line, column=column, status_code=400)


def load_json_object(content: bytes, file: str) -> dict[str, Any]:
    data = load_json(content, file)
    if not isinstance(data, dict):
        raise IngestError(f"expected a JSON object at the top level, got {type(data).__name__}", file=file)
    return data

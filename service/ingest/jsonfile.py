"""Decode one uploaded JSON file, turning syntax errors into an IngestError with line and column."""

from __future__ import annotations

import json
from typing import Any

from pydantic_core import from_json

from tewatch.ingest.errors import IngestError


def load_json(content: bytes, file: str) -> Any:
    """Parse JSON as asv writes it: bare `NaN` tokens are accepted and come back as float('nan').

    pydantic-core's parser reads large results files several times faster than the json module; what it
    refuses goes through the json module, which gives the same values and says where the error is."""
    try:
        return from_json(content, allow_inf_nan=True)
    except ValueError:
        pass
    try:
        text = content.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise IngestError(f"not UTF-8 text (byte {exc.start})", file=file, status_code=400) from exc
    if not text.strip():
        raise IngestError("the file is empty", file=file, status_code=400)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise IngestError(
            f"malformed JSON: {exc.msg}", file=file, line=exc.lineno, column=exc.colno, status_code=400
        ) from exc


def load_json_object(content: bytes, file: str) -> dict[str, Any]:
    data = load_json(content, file)
    if not isinstance(data, dict):
        raise IngestError(f"expected a JSON object at the top level, got {type(data).__name__}", file=file)
    return data

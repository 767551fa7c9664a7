"""The one error type of ingest: says which file, which field and where, and maps to an HTTP status."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class IngestError(Exception):
    message: str
    file: str | None = None
    field: str | None = None
    line: int | None = None
    column: int | None = None
    status_code: int = 422

    def __str__(self) -> str:
        where = self.file or "upload"
        if self.line is not None:
            where += f" line {self.line} column {self.column}"
        if self.field:
            where += f" field {self.field}"
        return f"{where}: {self.message}"

    def as_dict(self) -> dict:
        """The JSON answer; NULs and lone surrogates from the upload come back as escapes."""
        body = {"detail": printable(str(self)), "message": printable(self.message)}
        for key in ("file", "field", "line", "column"):
            value = getattr(self, key)
            if value is not None:
                body[key] = printable(value) if isinstance(value, str) else value
        return body


def printable(text: str) -> str:
    """The text with NULs and lone surrogates written as escapes, so any JSON answer can carry it."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8").replace("\x00", "\\x00")

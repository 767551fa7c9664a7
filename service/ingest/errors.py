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
        body = {"detail": str(self), "message": self.message}
        for key in ("file", "field", "line", "column"):
            if getattr(self, key) is not None:
                body[key] = getattr(self, key)
        return body

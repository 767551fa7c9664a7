"""Where a run's asv stderr lives in its sidecar, and how it is read back.

`tewatch run` keeps it gzip-compressed (`asv-stderr.log.gz`): a run whose cases fail prints the same
traceback hundreds of times, 0.9 MB of text that packs into 30 kB. A plain `asv-stderr.log` (older
sidecars, hand-made ones) reads the same. The upload sends the file as it is; the service accepts both.
Standard library only: the runner imports it without the service's packages."""

from __future__ import annotations

import gzip
import zlib
from pathlib import Path

COMPRESSED_NAME = "asv-stderr.log.gz"
PLAIN_NAME = "asv-stderr.log"
GZIP_MAGIC = b"\x1f\x8b"
# what one log may expand to: a 64 MiB upload limit of plain text, whatever its compression
MAX_TEXT_BYTES = 64 * 1024 * 1024


class StderrLogError(ValueError):
    pass


def find(sidecar: Path) -> Path | None:
    """The sidecar's stderr log, compressed or plain (compressed wins where both exist)."""
    for name in (COMPRESSED_NAME, PLAIN_NAME):
        if (sidecar / name).is_file():
            return sidecar / name
    return None


def read_text(sidecar: Path) -> str:
    path = find(sidecar)
    return decode(path.read_bytes()) if path else ""


def append(sidecar: Path, text: str) -> Path:
    """Adds one asv run's stderr to the sidecar's log (a run in chunks appends each), compressed."""
    earlier = read_text(sidecar)
    combined = f"{earlier}\n{text}" if earlier else text
    target = sidecar / COMPRESSED_NAME
    target.write_bytes(gzip.compress(combined.encode("utf-8"), compresslevel=9, mtime=0))
    (sidecar / PLAIN_NAME).unlink(missing_ok=True)
    return target


def decode(content: bytes) -> str:
    """The log's text from its bytes, gunzipped where they are gzip. Raises StderrLogError for a gzip
    stream that is cut short or corrupt, or that expands past MAX_TEXT_BYTES."""
    if content[:2] == GZIP_MAGIC:
        content = _gunzip(content)
    return content.decode("utf-8", errors="replace")


def _gunzip(content: bytes) -> bytes:
    inflate = zlib.decompressobj(wbits=31)
    try:
        text = inflate.decompress(content, MAX_TEXT_BYTES + 1)
    except zlib.error as exc:
        raise StderrLogError(f"gzip data is corrupt ({exc})") from None
    if len(text) > MAX_TEXT_BYTES:
        raise StderrLogError(f"expands past {MAX_TEXT_BYTES // (1024 * 1024)} MiB of text")
    if not inflate.eof:
        raise StderrLogError("gzip data is cut short")
    return text

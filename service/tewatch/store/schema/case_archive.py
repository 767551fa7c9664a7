"""The case records of one upload, stored as one raw file instead of one raw file per case.

Format: gzip (mtime 0, so the same records give the same bytes and the same digest) of the JSON object
`{"schema": "tewatch.cases/1", "files": {"<file name>": "<file content>", ...}}`, names sorted.
`zcat <file> | jq` reads it. The contents are the uploaded bytes exactly: ingest accepts only UTF-8
case files, and UTF-8 text survives a JSON string unchanged.
"""

from __future__ import annotations

import gzip
import hashlib

import orjson

SCHEMA = "tewatch.cases/1"
ROLE = "cases"  # the RunFile role of the archive
MEMBER_PREFIX = ROLE + "/"  # how the members are named where the upload's files are listed one by one
COMPRESS_LEVEL = 1  # records of one run are near-identical: level 1 already shrinks them about ten times


class CaseArchiveError(ValueError):
    pass


def pack(files: list[tuple[str, bytes]]) -> bytes:
    """Raises CaseArchiveError when a name repeats or a content is not UTF-8 text."""
    members: dict[str, str] = {}
    for name, content in sorted(files):
        if name in members:
            raise CaseArchiveError(f"the case file {name!r} appears twice")
        try:
            members[name] = content.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise CaseArchiveError(f"the case file {name!r} is not UTF-8 text") from exc
    document = orjson.dumps({"schema": SCHEMA, "files": members})
    return gzip.compress(document, compresslevel=COMPRESS_LEVEL, mtime=0)


def unpack(archive: bytes) -> list[tuple[str, bytes]]:
    """(file name, content) of every member, in name order."""
    try:
        document = orjson.loads(gzip.decompress(archive))
    except (OSError, EOFError, orjson.JSONDecodeError) as exc:
        raise CaseArchiveError(f"not a case archive: {exc}") from exc
    if not isinstance(document, dict) or document.get("schema") != SCHEMA:
        raise CaseArchiveError(f"not a {SCHEMA} archive")
    return [(name, text.encode("utf-8")) for name, text in sorted(document["files"].items())]


def member_digests(archive: bytes) -> list[tuple[str, str]]:
    """(role `cases/<name>`, sha256 of the content) of every member, as the upload listed them."""
    return [(MEMBER_PREFIX + name, hashlib.sha256(content).hexdigest()) for name, content in unpack(archive)]

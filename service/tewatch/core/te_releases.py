"""TE versions as the service reads them: which are published releases, and the stand-in commit a release
wheel without a commit is filed under."""

from __future__ import annotations

import hashlib
import re

# a published release (2.20.2, 2.21.0rc1, 2.19.post1); a development build (2.21.0.dev0+abc) is none
_RELEASE = re.compile(r"\d+(\.\d+)+((a|b|rc)\d+)?(\.post\d+)?")


def is_release(te_version: str | None) -> bool:
    return bool(te_version and _RELEASE.fullmatch(te_version))


def version_hash(te_version: str) -> str:
    """A stable 40-hex stand-in for a release wheel that carries no commit."""
    return hashlib.sha1(f"transformer_engine=={te_version}".encode()).hexdigest()


def is_version_stand_in(sha: str | None, te_version: str | None) -> bool:
    """The sha is the stand-in `tewatch run` files TE `te_version` under: the wheel named no commit."""
    return bool(sha and te_version and sha == version_hash(te_version))

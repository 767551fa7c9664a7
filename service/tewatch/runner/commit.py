"""Which commit a run is filed under: the installed Transformer Engine's, never tewatch's own."""

from __future__ import annotations

import re

from tewatch.core.te_releases import version_hash

__all__ = ["choose_commit", "version_hash"]

_HEX = re.compile(r"^[0-9a-f]{7,64}$")


def choose_commit(explicit: str | None, te_version: str, te_commit: str) -> tuple[str, str]:
    """(sha, how it was chosen). --commit wins; then TE's own commit; then a hash of TE's version."""
    if explicit:
        sha = explicit.strip().lower()
        if not _HEX.match(sha):
            raise ValueError(f"--commit {explicit!r} is not a hexadecimal commit id")
        return sha, "explicit"
    if te_commit:
        return te_commit.lower(), "te_commit"
    if te_version:
        return version_hash(te_version), "te_version_hash"
    raise ValueError(
        "Transformer Engine is not installed in the benchmark interpreter, so no TE commit names the run: "
        "pass --commit SHA (the project's own, say: --commit $(git rev-parse HEAD))"
    )

"""What one upload carries: the files of one asv run plus the metadata the runner knows."""

from __future__ import annotations

import posixpath
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime

from tewatch.ingest.errors import IngestError
from tewatch.ingest.fingerprints import digest_of, sha256_hex
from tewatch.store.schema import case_archive

FILE_ROLES = ("result", "machine", "benchmarks", "run", "asv_stderr")
CASES_ROLE = case_archive.ROLE


@dataclass(frozen=True)
class UploadBundle:
    result: bytes
    machine: bytes
    benchmarks: bytes
    run: bytes | None = None
    cases: list[tuple[str, bytes]] = field(default_factory=list)  # (file name, content)
    asv_stderr: bytes | None = None
    repo: str = ""
    branch: str | None = None
    pr_number: int | None = None
    merge_base_sha: str | None = None
    commit_date: datetime | None = None
    _digest: str | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        names = [case_file_name(name, i) for i, (name, _) in enumerate(self.cases)]
        duplicates = sorted(name for name, count in Counter(names).items() if count > 1)
        if duplicates:
            raise IngestError(f"the same case file was sent twice: {', '.join(duplicates)}", file="cases")
        object.__setattr__(self, "cases", sorted(zip(names, (c for _, c in self.cases), strict=True)))

    def files(self) -> list[tuple[str, bytes]]:
        """(role, content) for every file as uploaded, cases as `cases/<name>`."""
        files = self._single_files()
        files += [(f"{CASES_ROLE}/{name}", content) for name, content in self.cases]
        return files

    def stored_files(self) -> list[tuple[str, bytes]]:
        """(role, content) as the store keeps them (RunFile roles): the case records as one archive."""
        files = self._single_files()
        if self.cases:
            files.append((CASES_ROLE, case_archive.pack(self.cases)))
        return files

    def _single_files(self) -> list[tuple[str, bytes]]:
        return [(role, getattr(self, role)) for role in FILE_ROLES if getattr(self, role) is not None]

    def metadata(self) -> dict:
        return {
            "repo": self.repo,
            "branch": self.branch,
            "pr_number": self.pr_number,
            "merge_base_sha": self.merge_base_sha,
            "commit_date": self.commit_date.isoformat() if self.commit_date else None,
        }

    def digest(self) -> str:
        """Content digest over every part and the metadata: the identity of an upload.

        Computed once: a bundle is frozen."""
        digest = self._digest
        if digest is None:
            files = {role: sha256_hex(content) for role, content in self.files()}
            digest = digest_of({"files": files, "meta": self.metadata()})
            object.__setattr__(self, "_digest", digest)
        return digest


def case_file_name(name: str | None, index: int) -> str:
    base = posixpath.basename((name or "").replace("\\", "/"))
    return base or f"case-{index}.json"

"""A folder of runs of consecutive TE releases and its `releases.json`: which folder holds which release,
under which commit, dated how (the commit's date, or the wheel's build time where no commit is known)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from tewatch.ingest.discover import RunFiles, find_runs

MANIFEST = "releases.json"
SCHEMA = "tewatch.release-history/1"


class ReleaseHistoryError(ValueError):
    pass


@dataclass(frozen=True)
class ReleaseRun:
    version: str
    folder: Path
    commit: str
    commit_date: datetime
    dated_by: str

    def runs(self) -> list[RunFiles]:
        found = find_runs(self.folder)
        wrong = [r.result.name for r in found if not r.result.name.startswith(self.commit[:8])]
        if not found or wrong:
            raise ReleaseHistoryError(
                f"{self.folder}: expected runs of commit {self.commit[:8]} ({self.version}), found "
                + (", ".join(wrong) if wrong else "none")
            )
        return found


def release_runs(history: Path) -> list[ReleaseRun]:
    """The history's runs, oldest release first, as its manifest lists them."""
    path = history / MANIFEST
    try:
        manifest = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ReleaseHistoryError(f"{path}: {exc}") from exc
    if manifest.get("schema") != SCHEMA:
        raise ReleaseHistoryError(f"{path}: schema is {manifest.get('schema')!r}, expected {SCHEMA!r}")
    try:
        listed = [
            ReleaseRun(
                version=entry["version"],
                folder=history / entry["folder"],
                commit=entry["commit"],
                commit_date=datetime.fromisoformat(entry["commit_date"]),
                dated_by=entry["dated_by"],
            )
            for entry in manifest["runs"]
        ]
    except (KeyError, TypeError, ValueError) as exc:
        raise ReleaseHistoryError(f"{path}: a run entry lacks or misstates {exc}") from exc
    dates = [r.commit_date for r in listed]
    if dates != sorted(dates):
        raise ReleaseHistoryError(f"{path}: runs are not listed oldest first")
    return listed

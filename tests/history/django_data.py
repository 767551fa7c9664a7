"""A small real asv history read at run time from ../shared/data/ext-django-asv (django/django-asv's
ubuntu-latest results, see its SOURCE.md): the data stays there, the tests copy a subset of it."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT

ARCHIVE = REPO_ROOT.parent / "shared" / "data" / "ext-django-asv" / "django-ubuntu-latest.tar.xz"
MACHINE = "results/ubuntu-latest/"


def django_results(into: Path, files: int, environments: tuple[str, ...] | None = None) -> Path:
    """An asv results folder holding the archive's first `files` results files (in the archive's order:
    commits of every year, in every environment), optionally only those of some environments (`env_name`)."""
    if not ARCHIVE.exists():
        pytest.skip(f"{ARCHIVE} is not there (CI keeps ../shared beside the checkout)")
    kept = 0
    with tarfile.open(ARCHIVE) as tar:
        for member in tar:
            name = member.name.removeprefix("./")
            wanted = name == "results/benchmarks.json" or name == MACHINE + "machine.json"
            if not wanted and name.startswith(MACHINE) and name.endswith(".json") and kept < files:
                if environments is not None and not name.endswith(tuple(f"-{e}.json" for e in environments)):
                    continue  # asv names a results file <commit>-<environment>.json
                data = json.load(tar.extractfile(member))
                wanted = environments is None or data["env_name"] in environments
                kept += wanted
            if wanted:
                target = into / name
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(tar.extractfile(member).read())
    return into / "results"

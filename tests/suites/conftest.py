"""The suites' shared fixture: a throwaway git copy of the project for real `asv run`s."""

import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("project")
    shutil.copy(REPO / "asv.conf.json", root)
    shutil.copytree(REPO / "benchmarks", root / "benchmarks", ignore=shutil.ignore_patterns("__pycache__"))
    _git(root, "init", "-q")
    _git(root, "add", ".")
    _git(root, "-c", "user.name=ci", "-c", "user.email=ci@example.invalid", "commit", "-qm", "snapshot")
    return root

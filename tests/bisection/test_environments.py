"""Environments per commit, for real: a git repository of the test's own, `git archive`, virtual
environments, the import check and the smoke call."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.bisection.tinyrepo import Change, make_base, make_repo
from tewatch.bisect.environments import EnvironmentMaker
from tewatch.bisect.gitrepo import GitError, Repository

SMOKE = "import tinypkg; assert tinypkg.answer() in (41, 42); tinypkg.work()"


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str], str]:
    root = tmp_path_factory.mktemp("envs")
    shas = make_repo(root / "repo", [Change(), Change(answer=41), Change(broken=True)])
    return root / "repo", shas, make_base(root / "base", root / "repo", shas[0])


def maker(tiny: tuple[Path, list[str], str], cache: Path, **kwargs: object) -> EnvironmentMaker:
    repo, _, base = tiny
    options: dict = {"package": "tinypkg", "binaries": ("*.bin",), "smoke": SMOKE, "base_python": base}
    return EnvironmentMaker(Repository(repo), cache, **{**options, **kwargs})


def run(python: str, code: str) -> str:
    return subprocess.run([python, "-c", code], capture_output=True, text=True, check=True).stdout.strip()


def test_an_overlay_is_the_commits_python_over_the_releases_binaries(tiny, tmp_path: Path) -> None:
    _, shas, _ = tiny
    env = maker(tiny, tmp_path).make(shas[1])
    assert env.usable and env.strategy == "overlay"
    assert run(env.python, "import tinypkg; print(tinypkg.answer(), tinypkg.CORE)") == (
        f"41 core built from {shas[0]}"
    )
    assert run(env.python, "import tinypkg; print(tinypkg.EXTENSION)") == f"extension built from {shas[0]}"
    package = Path(run(env.python, "import tinypkg; print(tinypkg.__file__)")).parent
    assert (package / "_core.bin").is_symlink() and (package.parent / "tinypkg_ext.bin").is_symlink()
    assert not (package.parent / "csrc").exists()  # only the package's folder is laid out


def test_environments_are_kept_per_commit_skips_too(tiny, tmp_path: Path) -> None:
    _, shas, _ = tiny
    make = maker(tiny, tmp_path)
    first = make.make(shas[0])
    marker = Path(first.python).parent.parent / "kept"
    marker.write_text("")
    assert make.make(shas[0]) == first and marker.exists()  # not made again
    broken = make.make(shas[2])
    assert not broken.usable and "ImportError: broken" in broken.skip_reason
    assert make.cached(shas[2]) == broken
    (make.folder(shas[2]) / "env.json").unlink()  # as a make killed before it finished leaves it
    assert make.make(shas[2]) == broken


def test_a_base_without_the_built_package_skips_cleanly(tiny, tmp_path: Path) -> None:
    import sys

    _, shas, _ = tiny
    env = maker(tiny, tmp_path, base_python=sys.executable).make(shas[0])
    assert not env.usable and "has no built tinypkg" in env.skip_reason


def test_te_here_is_a_skip_not_a_crash(tiny, tmp_path: Path) -> None:
    """No TE in this interpreter: the default overlay (TE's package and binaries) skips the commit."""
    import sys

    repo, shas, _ = tiny
    env = EnvironmentMaker(Repository(repo), tmp_path, base_python=sys.executable).make(shas[0])
    assert not env.usable and "transformer_engine" in env.skip_reason


def test_a_build_command_makes_the_environment(tiny, tmp_path: Path) -> None:
    _, shas, _ = tiny
    build = (
        'cp -r tinypkg "$TEWATCH_ENV_SITE/" && echo "built at $TEWATCH_COMMIT" > "$TEWATCH_ENV_SITE/tinypkg/_core.bin"'
        ' && echo "extension built at $TEWATCH_COMMIT" > "$TEWATCH_ENV_SITE/tinypkg_ext.bin"'
    )
    env = maker(tiny, tmp_path, build_command=build).make(shas[1])
    assert env.usable and env.strategy == "build"
    assert (
        run(env.python, "import tinypkg; print(tinypkg.answer(), tinypkg.CORE)") == f"41 built at {shas[1]}"
    )
    failed = maker(tiny, tmp_path, build_command="echo no compiler >&2; exit 3").make(shas[0])
    assert not failed.usable and failed.skip_reason == "the build command failed: no compiler"


def test_commits_are_resolved_and_ordered(tiny) -> None:
    repo, shas, _ = tiny
    git = Repository(repo)
    assert git.resolve(shas[1][:10]) == shas[1]
    assert git.line(shas[0], shas[2]) == shas
    assert git.is_ancestor(shas[0], shas[2]) and not git.is_ancestor(shas[2], shas[0])
    assert git.subject(shas[1]).startswith("change 1")
    for name in ("no-such-commit", "--all", ""):
        with pytest.raises(GitError, match="unknown commit"):
            git.resolve(name)

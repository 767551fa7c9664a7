"""scripts/slowdown_history.py: a history of an installed package in which exactly one commit slows a
function down, every other commit changing a comment only."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from tests.bisection.tinyrepo import git

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "slowdown_history.py"
SLOW_AT, COMMITS = 11, 17

CALLS = textwrap.dedent("""
    import sys
    sys.path.insert(0, sys.argv[1])
    import toypkg.ops as ops
    results = [ops.work() for _ in range(12)]
    slowed = sys.modules.get("toypkg._slower")
    print(results == [42] * 12, hasattr(ops.work, "__wrapped__"), slowed and slowed.touched["gemm-slower-5"])
""")


def installed_package(where: Path) -> Path:
    package = where / "toypkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "ops.py").write_text("def work():\n    return sum(range(1000)) and 42\n")
    for name in ("a.py", "b.py", "c.py"):
        (package / name).write_text("VALUE = 1\n")
    (package / "_native.so").write_bytes(b"\x7fELF built")
    (package / "__pycache__").mkdir()
    (package / "__pycache__" / "ops.cpython-311.pyc").write_bytes(b"compiled")
    return package


def calls_at(repo: Path, sha: str, where: Path) -> str:
    where.mkdir()
    subprocess.run(f"git -C {repo} archive {sha} toypkg | tar -x -C {where}", shell=True, check=True)
    done = subprocess.run(
        [sys.executable, "-c", CALLS, str(where)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_one_commit_slows_the_function_and_every_other_changes_a_comment(tmp_path: Path) -> None:
    repo = tmp_path / "history"
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--package-dir", str(installed_package(tmp_path / "site")),
         "--repo", str(repo), "--commits", str(COMMITS), "--slow-at", str(SLOW_AT), "--slow-module", "ops.py",
         "--function", "work"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    printed = dict(line.split() for line in done.stdout.splitlines())
    shas = git(repo, "rev-list", "--reverse", "HEAD").split()
    assert len(shas) == COMMITS
    assert printed == {"good": shas[0], "slow": shas[SLOW_AT], "bad": shas[-1]}
    assert sorted(git(repo, "ls-tree", "-r", "--name-only", shas[0]).split()) == [
        "toypkg/__init__.py", "toypkg/a.py", "toypkg/b.py", "toypkg/c.py", "toypkg/ops.py",
    ]  # fmt: skip
    for number in range(1, COMMITS):
        added = [
            line[1:]
            for line in git(repo, "diff", "--unified=0", shas[number - 1], shas[number]).splitlines()
            if line.startswith("+") and not line.startswith("+++")
        ]
        code = [line for line in added if line.strip() and not line.lstrip().startswith("#")]
        assert bool(code) == (number == SLOW_AT), (number, code)
    assert "work takes 5% longer (gemm-slower-5)" in git(repo, "log", "-1", "--format=%s", shas[SLOW_AT])

    assert calls_at(repo, shas[SLOW_AT - 1], tmp_path / "before") == "True False None"
    # every call goes through the slowdown: the first ones measure the function, the later ones wait
    assert calls_at(repo, shas[-1], tmp_path / "after") == "True True 12"


def test_a_slow_commit_outside_the_history_is_refused(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--package-dir", str(installed_package(tmp_path / "site")),
         "--repo", str(tmp_path / "history"), "--commits", "5", "--slow-at", "5", "--slow-module", "ops.py",
         "--function", "work"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode != 0
    assert "--slow-at must lie between 1 and 4" in done.stderr

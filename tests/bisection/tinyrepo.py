"""A package with a git history of its own, a built release of it, and an asv suite that measures it: what
the bisection tests run on CPU in place of TE, its checkout, a built TE and the suites.

`tinypkg` reads `_core.bin` beside its `__init__.py` and `tinypkg_ext.bin` beside its folder at import
(the built parts, as TE loads its core library from its folder and its torch extension, which pip puts
beside it): an overlay without them cannot import. Each commit sets `ANSWER` (the suite's correctness check
wants 42) and `SLEEP_S` (what the timed call waits); a broken commit cannot be imported."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]

INIT = textwrap.dedent("""
    from pathlib import Path

    CORE = (Path(__file__).with_name("_core.bin")).read_text().strip()  # the built parts
    EXTENSION = (Path(__file__).parent.parent / "tinypkg_ext.bin").read_text().strip()
    from tinypkg.ops import answer, work  # noqa: E402
""")

OPS = textwrap.dedent("""
    import time

    ANSWER = {answer}
    SLEEP_S = {sleep_s}


    def answer():
        return ANSWER


    def work():
        time.sleep(SLEEP_S)
""")

SUITE = textwrap.dedent("""
    from typing import Any

    from benchmarks.harness import records
    from benchmarks.harness.case import Case, Prepared


    class Answer(Case):
        param_names = ["backend"]
        params = [["torch-ref"]]
        needs_torch = False
        main_check = "answer"

        def labels(self, p: dict[str, Any]) -> dict[str, Any]:
            return {"backend": p["backend"], "op": "answer"}

        def prepare(self, p: dict[str, Any], profile: Any) -> Prepared:
            import tinypkg

            self.record.add(records.compare("answer", "abs_error", abs(tinypkg.answer() - 42), 0.0))
            return Prepared(fn=tinypkg.work, device="cpu", flush_l2=False, kernel_time=False)


    class Other(Case):
        param_names = ["backend"]
        params = [["torch-ref"]]
        needs_torch = False
        main_check = "other"

        def labels(self, p: dict[str, Any]) -> dict[str, Any]:
            return {"backend": p["backend"], "op": "other"}

        def prepare(self, p: dict[str, Any], profile: Any) -> Prepared:
            return Prepared(fn=lambda: sum(range(100)), device="cpu", flush_l2=False, kernel_time=False)
""")

ASV_CONF = """{"version": 1, "project": "tinypkg-suite", "repo": ".", "branches": ["HEAD"],
"environment_type": "existing", "pythons": ["same"], "benchmark_dir": "benchmarks",
"results_dir": "results", "html_dir": "html"}"""


@dataclass(frozen=True)
class Change:
    answer: int = 42
    sleep_s: float = 0.002
    broken: bool = False


def git(repo: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_DATE": "2026-11-01T00:00:00Z",
        "GIT_COMMITTER_DATE": "2026-11-01T00:00:00Z",
    }
    done = subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@localhost", *args],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    return done.stdout.strip()


def make_repo(where: Path, changes: list[Change]) -> list[str]:
    """One commit per change, oldest first; their hashes."""
    where.mkdir(parents=True)
    git(where, "init", "-q", "-b", "main")
    (where / "csrc").mkdir()
    (where / "csrc" / "core.cpp").write_text("int core() { return 42; }\n")
    shas = []
    for number, change in enumerate(changes):
        package = where / "tinypkg"
        package.mkdir(exist_ok=True)
        (package / "__init__.py").write_text(
            INIT + ("\nraise ImportError('broken')\n" if change.broken else "")
        )
        (package / "ops.py").write_text(OPS.format(answer=change.answer, sleep_s=change.sleep_s))
        git(where, "add", "-A")
        git(
            where,
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            f"change {number}: answer {change.answer}, "
            f"sleep {change.sleep_s}{' (broken)' if change.broken else ''}",
        )
        shas.append(git(where, "rev-parse", "HEAD"))
    return shas


def make_base(where: Path, repo: Path, release: str) -> str:
    """A virtual environment with the release built (its Python files and `_core.bin`) and this
    interpreter's packages after it; its python."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True)
    python = str(where / "bin" / "python")
    site = Path(
        subprocess.run(
            [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    ours = subprocess.run(
        [sys.executable, "-c", "import json, site; print(json.dumps(site.getsitepackages()))"],
        capture_output=True,
        text=True,
        check=True,
        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
    ).stdout
    import json

    (site / "base.pth").write_text(
        "".join(f"import site; site.addsitedir({p!r})\n" for p in json.loads(ours))
    )
    tree = where.parent / "release-tree"
    subprocess.run(f"git -C {repo} archive {release} tinypkg | tar -x -C {site}", shell=True, check=True)
    (site / "tinypkg" / "_core.bin").write_text("core built from " + release + "\n")
    (site / "tinypkg_ext.bin").write_text("extension built from " + release + "\n")
    shutil.rmtree(tree, ignore_errors=True)
    return python


def make_project(where: Path) -> Path:
    """An asv project whose suite measures tinypkg with tewatch's own harness."""
    benchmarks = where / "benchmarks"
    benchmarks.mkdir(parents=True)
    (where / "asv.conf.json").write_text(ASV_CONF)
    shutil.copy(REPO_ROOT / "benchmarks" / "__init__.py", benchmarks / "__init__.py")
    # the harness alone: its suite needs no emulated NVFP4 (whose package asv would import, and torch with it)
    (benchmarks / "harness").symlink_to(REPO_ROOT / "benchmarks" / "harness")
    (benchmarks / "tiny.py").write_text(SUITE)
    git(where, "init", "-q", "-b", "main")
    git(where, "add", "-A")
    git(where, "commit", "-q", "-m", "the suite")
    return where

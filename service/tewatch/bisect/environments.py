"""An interpreter with the package under test (TE) at any commit, made once per commit and kept.

- overlay: the package's Python files at the commit, laid in a fresh virtual environment over the built
  package of the base interpreter (TE's core library and torch extension of the nearest release): its
  binaries, in its folder and the extension modules named after it beside it, linked into the overlay,
  its site folders added after the overlay's own by a `.pth` file.
- build: the commit's whole tree built by a command the user gives, into a fresh virtual environment.

Either is checked by importing the package and a smoke call; an environment that fails the check is
`skip` (as `git bisect skip`), kept as such, and never measured. docs/bisect.md says what each finds.
"""

from __future__ import annotations

import fnmatch
import json
import os
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

from tewatch.bisect.gitrepo import GitError, Repository

TE_PACKAGE = "transformer_engine"
TE_BINARIES = ("*.so", "*.so.*")
TE_SMOKE = (
    "import torch, transformer_engine.pytorch as te; "
    "device = 'cuda' if torch.cuda.is_available() else 'cpu'; "
    "te.Linear(64, 64, device=device)(torch.randn(16, 64, device=device)).sum().item()"
)
CHECK_TIMEOUT_S = 600
ENV_FILE = "env.json"
STRATEGIES = ("overlay", "build")


@dataclass(frozen=True)
class Environment:
    commit: str
    strategy: str
    python: str  # the interpreter to measure in ("" when skipped)
    skip_reason: str = ""

    @property
    def usable(self) -> bool:
        return not self.skip_reason


@dataclass(frozen=True)
class EnvironmentMaker:
    repo: Repository
    cache: Path
    base_python: str = sys.executable
    package: str = TE_PACKAGE  # import name, and its folder in the repository unless package_path says
    package_path: str | None = None
    binaries: tuple[str, ...] = TE_BINARIES
    smoke: str = TE_SMOKE
    build_command: str | None = None  # set: the build strategy

    @property
    def strategy(self) -> str:
        return "build" if self.build_command else "overlay"

    def folder(self, commit: str) -> Path:
        return self.cache / f"{self.strategy}-{commit}"

    def cached(self, commit: str) -> Environment | None:
        path = self.folder(commit) / ENV_FILE
        if not path.is_file():
            return None
        return Environment(**json.loads(path.read_text()))

    def make(self, commit: str) -> Environment:
        """The commit's environment: from the cache, else made, checked and cached (skips too)."""
        found = self.cached(commit)
        if found is not None:
            return found
        folder = self.folder(commit)
        shutil.rmtree(folder, ignore_errors=True)  # a make that was interrupted leaves no env.json
        folder.mkdir(parents=True)
        try:
            python, site = self._virtualenv(folder / "venv")
            if self.build_command:
                self._build(commit, folder, python, site)
            else:
                self._overlay(commit, site)
            self._check(python)
            made = Environment(commit, self.strategy, python)
        except (_Unusable, GitError) as exc:
            made = Environment(commit, self.strategy, "", skip_reason=str(exc))
        staged = folder / f"{ENV_FILE}.part"
        staged.write_text(json.dumps(asdict(made), indent=1))
        staged.replace(folder / ENV_FILE)
        return made

    # the steps ------------------------------------------------------------------------------------------

    def _run(
        self, args: list[str], what: str, cwd: Path | None = None, extra_env: dict[str, str] | None = None
    ) -> str:
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
        env.update(extra_env or {})
        try:
            done = subprocess.run(
                args, capture_output=True, text=True, timeout=CHECK_TIMEOUT_S, env=env, cwd=cwd
            )
        except subprocess.TimeoutExpired as exc:
            raise _Unusable(f"{what} took over {CHECK_TIMEOUT_S} s") from exc
        if done.returncode != 0:
            lines = (done.stderr or done.stdout).strip().splitlines()
            raise _Unusable(f"{what} failed: {lines[-1] if lines else f'exit {done.returncode}'}")
        return done.stdout

    def _base_sites(self) -> list[str]:
        code = "import json, site; print(json.dumps(site.getsitepackages()))"
        return json.loads(self._run([self.base_python, "-c", code], "reading the base interpreter"))

    def _virtualenv(self, where: Path) -> tuple[str, Path]:
        """A virtual environment of the base interpreter whose own site folder comes first and the base's
        site folders (with their .pth files) after it."""
        self._run([self.base_python, "-m", "venv", "--without-pip", str(where)], "making a virtualenv")
        python = str(where / "bin" / "python")
        code = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
        site = Path(self._run([python, "-c", code], "reading the virtualenv").strip())
        lines = [f"import site; site.addsitedir({folder!r})" for folder in self._base_sites()]
        (site / "tewatch-base.pth").write_text("\n".join(lines) + "\n")
        return python, site

    def _base_package(self) -> Path:
        code = (
            "import importlib.util, json, sys; s = importlib.util.find_spec(sys.argv[1]); "
            "print(json.dumps(list(s.submodule_search_locations or []) if s else []))"
        )
        found = json.loads(
            self._run([self.base_python, "-c", code, self.package], "finding the base package")
        )
        if not found:
            raise _Unusable(f"{self.base_python} has no built {self.package} to lay the overlay over")
        return Path(found[0])

    def _overlay(self, commit: str, site: Path) -> None:
        base = self._base_package()
        source = self.package_path or self.package
        staging = site / ".tewatch-archive"
        self.repo.extract(commit, source, staging)
        if not (staging / source).is_dir():
            raise _Unusable(f"commit {commit[:12]} has no {source}/")
        target = site / self.package
        (staging / source).replace(target)
        shutil.rmtree(staging)
        for built in self._base_binaries(base):
            linked = target / built.relative_to(base) if built.is_relative_to(base) else site / built.name
            if not linked.exists():
                linked.parent.mkdir(parents=True, exist_ok=True)
                linked.symlink_to(built)

    def _base_binaries(self, base: Path) -> list[Path]:
        """The base's built files: those in the package's folder (PyPI's TE wheels put both libraries in
        `transformer_engine/wheel_lib/`), and the extension modules named after the package beside it (a
        source build of TE puts `transformer_engine_torch.*.so` there)."""
        inside = [built for pattern in self.binaries for built in base.rglob(pattern)]
        beside = [
            built
            for built in base.parent.glob(f"{self.package}*")
            if any(fnmatch.fnmatch(built.name, pattern) for pattern in self.binaries)
        ]
        return [built for built in inside + beside if built.is_file() and "__pycache__" not in built.parts]

    def _build(self, commit: str, folder: Path, python: str, site: Path) -> None:
        source = folder / "src"
        self.repo.extract(commit, "", source)
        assert self.build_command
        output = self._run(
            ["bash", "-c", self.build_command],
            "the build command",
            cwd=source,
            extra_env={"TEWATCH_ENV_PYTHON": python, "TEWATCH_ENV_SITE": str(site), "TEWATCH_COMMIT": commit},
        )
        (folder / "build.log").write_text(output)

    def _check(self, python: str) -> None:
        self._run([python, "-c", f"import {self.package}"], f"import {self.package}")
        if self.smoke:
            self._run([python, "-c", self.smoke], "the smoke call")


class _Unusable(Exception):
    """Why an environment is skipped."""

"""What a bisection asks of a git repository (a checkout or a bare git directory): commits by name, the
first-parent line between two of them, subjects, and a commit's tree written out by `git archive`."""

from __future__ import annotations

import io
import subprocess
import tarfile
from dataclasses import dataclass
from pathlib import Path


class GitError(Exception):
    """A commit or repository git cannot use; the message is one line."""


@dataclass(frozen=True)
class Repository:
    path: Path

    def _git(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[bytes]:
        try:
            done = subprocess.run(["git", "-C", str(self.path), *args], capture_output=True, timeout=600)
        except FileNotFoundError as exc:
            raise GitError("git is not installed") from exc
        if check and done.returncode != 0:
            message = done.stderr.decode(errors="replace").strip().splitlines()
            raise GitError(message[-1] if message else f"git {args[0]} failed")
        return done

    def _text(self, *args: str) -> str:
        return self._git(*args).stdout.decode().strip()

    def resolve(self, name: str) -> str:
        """The full hash of a commit name; GitError naming it when the repository has no such commit."""
        if not name or name.startswith("-"):
            raise GitError(f"unknown commit {name!r}")
        done = self._git("rev-parse", "--verify", "--quiet", f"{name}^{{commit}}", check=False)
        if done.returncode != 0:
            raise GitError(f"unknown commit {name!r} in {self.path}")
        return done.stdout.decode().strip()

    def is_ancestor(self, older: str, newer: str) -> bool:
        return self._git("merge-base", "--is-ancestor", older, newer, check=False).returncode == 0

    def line(self, good: str, bad: str) -> list[str]:
        """good, then the first-parent commits after it up to and including bad, oldest first."""
        listed = self._text("rev-list", "--first-parent", "--reverse", f"{good}..{bad}").split()
        return [good, *listed]

    def subject(self, sha: str) -> str:
        return self._text("log", "-1", "--format=%s", sha)

    def committed_at(self, sha: str) -> int:
        return int(self._text("log", "-1", "--format=%ct", sha))

    def extract(self, sha: str, subdir: str, into: Path) -> None:
        """The commit's `subdir` (the whole tree for "") written under `into`, paths kept."""
        args = ["archive", "--format=tar", sha]
        if subdir:
            args += ["--", subdir]
        with tarfile.open(fileobj=io.BytesIO(self._git(*args).stdout)) as tar:
            tar.extractall(into, filter="data")

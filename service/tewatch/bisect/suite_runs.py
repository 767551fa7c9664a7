"""How a bisection or a backfill measures a commit: the suites run by `tewatch run`'s own code in the
commit's environment, once or in A/B rounds against another commit, filed under the commit's hash; and
which benchmarks a selection names, found by asv's discovery in the base interpreter (nothing built)."""

from __future__ import annotations

import itertools
import json
import os
import re
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tewatch.bisect.environments import Environment
from tewatch.runner.rounds import run_ab
from tewatch.runner.suite import RunError, RunOptions, load_asv_config, run_suite

DISCOVER = "import sys; from asv_runner.discovery import _discover; _discover(sys.argv[1:])"


class SelectionError(Exception):
    """A selection that names no benchmark, or a suite asv cannot discover."""


@dataclass(frozen=True)
class SuiteRun:
    project: Path  # the folder holding asv.conf.json and benchmarks/
    bench: str  # asv's --bench: a regular expression of benchmark names
    profile: str = "full"
    backends: tuple[str, ...] | None = None
    machine: str | None = None
    rounds: int = 3  # A/B rounds of a performance step

    def _options(self, env: Environment, folder: Path) -> RunOptions:
        return RunOptions(
            project=self.project,
            profile=self.profile,
            backends=self.backends,
            bench=self.bench,
            machine=self.machine,
            results_dir=folder,
            commit=env.commit,
            python=env.python,
        )

    def once(
        self, env: Environment, folder: Path, progress: Callable[[float, str], None] | None = None
    ) -> Path:
        """The results file of one run of the selection at `env`'s commit."""
        return run_suite(self._options(env, folder), progress).results_file

    def ab(self, base: Environment, head: Environment, folder: Path) -> tuple[Path, Path]:
        """The base's and the head's results files of A/B rounds between two commits' environments."""
        outcome = run_ab(
            [("base", self._options(base, folder / "base")), ("head", self._options(head, folder / "head"))],
            self.rounds,
        )
        return outcome.sides["base"].results_file, outcome.sides["head"].results_file

    def selected(self, python: str) -> list[str]:
        """The benchmark names the selection matches; SelectionError when it matches none."""
        try:
            pattern = re.compile(self.bench)
        except re.error as exc:
            raise SelectionError(f"--bench {self.bench!r} is not a regular expression: {exc}") from exc
        conf = load_asv_config(self.project)
        benchmark_dir = (self.project / conf.get("benchmark_dir", "benchmarks")).resolve()
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "ASV_PYTHONPATH")}
        with tempfile.TemporaryDirectory() as tmp:
            listed = Path(tmp) / "benchmarks.json"
            done = subprocess.run(
                [python, "-c", DISCOVER, str(benchmark_dir), str(listed)],
                cwd=self.project,
                env=env,
                capture_output=True,
                text=True,
                timeout=600,
            )
            if done.returncode != 0 or not listed.is_file():
                lines = done.stderr.strip().splitlines()
                raise SelectionError(
                    f"asv cannot discover the suites: {lines[-1] if lines else done.returncode}"
                )
            benchmarks = json.loads(listed.read_text())
        chosen = [b["name"] for b in benchmarks if any(pattern.search(n) for n in asv_names(b))]
        if not chosen:
            raise SelectionError(f"--bench {self.bench!r} matches none of the {len(benchmarks)} benchmarks")
        return chosen


def asv_names(benchmark: dict) -> list[str]:
    """The names asv matches --bench against: a parameterized benchmark's `name(param, ...)` for each of
    its parameter combinations (asv.benchmarks.Benchmarks), a plain one's name."""
    if not benchmark.get("params"):
        return [benchmark["name"]]
    return [f"{benchmark['name']}({', '.join(combo)})" for combo in itertools.product(*benchmark["params"])]


__all__ = ["RunError", "SelectionError", "SuiteRun"]

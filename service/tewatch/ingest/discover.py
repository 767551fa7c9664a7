"""Find the runs in an asv results directory: each results file with its machine.json,
benchmarks.json and tewatch sidecar (docs/records.md layout)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from tewatch.core import stderr_log_file

ASV_SIDE_FILES = {"machine.json", "benchmarks.json"}
SIDECAR_SUFFIX = ".tewatch"


@dataclass
class RunFiles:
    result: Path
    machine: Path
    benchmarks: Path
    run: Path | None = None
    cases: list[Path] = field(default_factory=list)
    asv_stderr: Path | None = None

    def parts(self) -> list[tuple[str, Path]]:
        """(form part name, file) for the multipart upload."""
        parts = [("result", self.result), ("machine", self.machine), ("benchmarks", self.benchmarks)]
        if self.run:
            parts.append(("run", self.run))
        if self.asv_stderr:
            parts.append(("asv_stderr", self.asv_stderr))
        parts += [("cases", path) for path in self.cases]
        return parts


class DiscoveryError(Exception):
    pass


def find_runs(results_dir: Path) -> list[RunFiles]:
    results_dir = Path(results_dir)
    if not results_dir.is_dir():
        raise DiscoveryError(f"{results_dir} is not a directory")
    runs = []
    for path in sorted(results_dir.rglob("*.json")):
        if path.name in ASV_SIDE_FILES or any(p.name.endswith(SIDECAR_SUFFIX) for p in path.parents):
            continue
        if any(part.startswith(".") for part in path.relative_to(results_dir).parts):
            continue  # `tewatch run`'s own files (.tewatch-asv.conf.json, .tewatch-staging-*/)
        runs.append(_run_files(path, results_dir))
    return runs


def _run_files(result: Path, results_dir: Path) -> RunFiles:
    machine = result.parent / "machine.json"
    if not machine.is_file():
        raise DiscoveryError(f"{result}: no machine.json beside it")
    benchmarks = _nearest(result.parent, results_dir, "benchmarks.json")
    if benchmarks is None:
        raise DiscoveryError(f"{result}: no benchmarks.json in {results_dir} or below it")
    sidecar = result.with_suffix(SIDECAR_SUFFIX)
    run = sidecar / "run.json"
    return RunFiles(
        result=result,
        machine=machine,
        benchmarks=benchmarks,
        run=run if run.is_file() else None,
        cases=sorted((sidecar / "cases").glob("*.json")),
        asv_stderr=stderr_log_file.find(sidecar),
    )


def _nearest(start: Path, stop: Path, name: str) -> Path | None:
    for folder in [start, *start.parents]:
        if (folder / name).is_file():
            return folder / name
        if folder == stop.resolve() or folder == stop:
            break
    return None

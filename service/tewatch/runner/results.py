"""Reading and re-filing asv's v2 results files (bare NaN tokens kept as asv writes them)."""

from __future__ import annotations

import ast
import hashlib
import itertools
import json
import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tewatch.core.asv_env import results_file_name


def load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())  # Python's json accepts asv's NaN tokens


def save(path: Path, data: dict[str, Any]) -> None:
    path.write_text(json.dumps(data, allow_nan=True, separators=(",", ":")))


def find(machine_dir: Path, sha: str) -> Path | None:
    for path in sorted(machine_dir.glob("*.json")):
        if path.name == "machine.json":
            continue
        try:
            if load(path).get("commit_hash") == sha:
                return path
        except (json.JSONDecodeError, OSError):
            continue
    return None


def refile(path: Path, sha: str) -> Path:
    """File a results file (and its sidecar folder) under another commit; returns the new path."""
    data = load(path)
    data["commit_hash"] = sha
    target = path.with_name(results_file_name(sha, data["env_name"]))
    save(target, data)
    old_sidecar, new_sidecar = sidecar_dir(path), sidecar_dir(target)
    if target != path:
        path.unlink()
        if old_sidecar.exists():
            if new_sidecar.exists():
                raise FileExistsError(f"{new_sidecar} already exists")
            old_sidecar.rename(new_sidecar)
    return target


def sidecar_dir(results_path: Path) -> Path:
    return results_path.with_suffix(".tewatch")


def case_id(case: str, params: dict[str, Any]) -> str:
    canonical = json.dumps(params, sort_keys=True, separators=(",", ":"))
    return f"{case}-{hashlib.sha1(canonical.encode()).hexdigest()[:12]}"


@dataclass(frozen=True)
class CaseResult:
    benchmark: str  # module.Class.method
    case: str  # module.Class
    params: dict[str, Any]
    value: Any  # float, NaN (skipped), or None (failed)

    @property
    def case_id(self) -> str:
        return case_id(self.case, self.params)

    @property
    def failed(self) -> bool:
        return self.value is None

    @property
    def skipped(self) -> bool:
        return isinstance(self.value, float) and math.isnan(self.value)


def iter_case_results(results: dict[str, Any], benchmarks: dict[str, Any]) -> Iterator[CaseResult]:
    """One entry per benchmark x params combination, in asv's (itertools.product) order."""
    columns = results.get("result_columns", ["result", "params"])
    for name, row in results.get("results", {}).items():
        row = list(row) + [None] * (len(columns) - len(row))
        values = row[columns.index("result")]
        param_lists = row[columns.index("params")] or []
        names = benchmarks.get(name, {}).get("param_names", [])
        combos = list(itertools.product(*param_lists)) if param_lists else [()]
        if values is None:
            values = [None] * len(combos)
        for combo, value in zip(combos, values, strict=False):
            params = {n: ast.literal_eval(v) for n, v in zip(names, combo, strict=False)}
            yield CaseResult(benchmark=name, case=name.rsplit(".", 1)[0], params=params, value=value)

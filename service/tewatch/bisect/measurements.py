"""One measured commit as a bisection reads it: per case, its verdict, its series' samples (A/B rounds
split by `round_sizes`) and its tracked values, from an asv results file and its sidecar records."""

from __future__ import annotations

import json
import math
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tewatch.runner import results


@dataclass(frozen=True)
class CaseMeasurement:
    case_id: str
    benchmarks: tuple[str, ...]  # module.Class.method of the results that name this case
    status: str  # the record's verdict; `error` for a case asv ran that left no record
    message: str = ""
    samples: dict[str, list[float]] = field(default_factory=dict)  # method or metric -> samples
    round_sizes: dict[str, list[int]] = field(default_factory=dict)
    values: dict[str, float] = field(default_factory=dict)  # method or metric -> value (median of samples)
    backend: str = ""  # the record's backend label: series of one backend share their noise


def _samples_column(data: dict[str, Any], name: str) -> list[Any] | None:
    columns = data.get("result_columns", [])
    if "samples" not in columns:
        return None
    row = data["results"][name]
    index = columns.index("samples")
    return row[index] if index < len(row) else None


def read(results_file: Path) -> dict[str, CaseMeasurement]:
    """Every case of one results file by case id; `benchmarks.json` is the results folder's."""
    data = results.load(results_file)
    described = json.loads((results_file.parent.parent / "benchmarks.json").read_text())
    records: dict[str, dict[str, Any]] = {}
    for path in sorted((results.sidecar_dir(results_file) / "cases").glob("*.json")):
        record = json.loads(path.read_text())
        records[results.case_id(record["case"], record["params"])] = record
    found: dict[str, dict[str, Any]] = {}
    combination: dict[str, int] = {}
    for result in results.iter_case_results(data, described):
        entry = found.setdefault(result.case_id, {"benchmarks": [], "samples": {}, "values": {}})
        entry["benchmarks"].append(result.benchmark)
        method = result.benchmark.rsplit(".", 1)[1]
        index = combination.get(result.benchmark, 0)
        combination[result.benchmark] = index + 1
        column = _samples_column(data, result.benchmark)
        samples = column[index] if column and index < len(column) else None
        if samples:
            entry["samples"][method] = [float(s) for s in samples]
        if isinstance(result.value, int | float) and math.isfinite(result.value):
            entry["values"][method] = float(result.value)
    measured = {}
    for case_id, entry in found.items():
        record = records.get(case_id, {})
        verdict = record.get("verdict", {"status": "error", "message": "no case record"})
        samples = dict(entry["samples"])
        values = dict(entry["values"])
        for name, metric in record.get("metrics", {}).items():
            if metric.get("samples"):
                samples[name] = [float(s) for s in metric["samples"]]
            if isinstance(metric.get("value"), int | float):
                values[name] = float(metric["value"])
        for name, series in samples.items():
            values.setdefault(name, statistics.median(series))
        measured[case_id] = CaseMeasurement(
            case_id=case_id,
            benchmarks=tuple(entry["benchmarks"]),
            status=verdict.get("status", "error"),
            message=str(verdict.get("message") or verdict.get("exception_class") or ""),
            samples=samples,
            round_sizes={k: list(v) for k, v in record.get("round_sizes", {}).items()},
            values=values,
            backend=str(record.get("labels", {}).get("backend") or ""),
        )
    return measured

"""asv's own files: the v2 results file, benchmarks.json and machine.json, read into plain dataclasses."""

from __future__ import annotations

import ast
import functools
import itertools
import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tewatch.ingest.discover import DiscoveryError, find_runs
from tewatch.ingest.errors import IngestError
from tewatch.ingest.jsonfile import load_json_object

SUPPORTED_RESULTS_VERSION = 2
RESULT_COLUMNS = (
    "result",
    "params",
    "version",
    "started_at",
    "duration",
    "stats_ci_99_a",
    "stats_ci_99_b",
    "stats_q_25",
    "stats_q_75",
    "stats_number",
    "stats_repeat",
    "samples",
    "profile",
)
STATS_COLUMNS = ("stats_ci_99_a", "stats_ci_99_b", "stats_q_25", "stats_q_75", "stats_number", "stats_repeat")


@dataclass(slots=True)
class ComboResult:
    """One benchmark at one parameter combination, as asv stored it; non-finite statistics are None."""

    param_reprs: tuple[str, ...]
    value: float | None  # float('nan') = skipped, None = failed
    samples: list[float] | None = None
    q_25: float | None = None
    q_75: float | None = None
    ci_99_a: float | None = None
    ci_99_b: float | None = None
    number: int | None = None
    repeat: int | None = None


@dataclass
class BenchmarkResult:
    name: str
    version: str
    started_at_ms: int | None
    duration: float | None
    combos: list[ComboResult]


@dataclass
class AsvResults:
    commit_hash: str
    env_name: str
    date_ms: int | None
    python: str
    benchmarks: list[BenchmarkResult]


@dataclass
class BenchmarkInfo:
    name: str
    param_names: list[str]
    type: str
    unit: str
    version: str


@functools.lru_cache(maxsize=65536)
def decode_param(text: str) -> Any:
    """asv stores parameter values as repr() strings; bring back the Python literal where there is one."""
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return text


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _finite_or_none(value: Any, file: str, where: str) -> float | int | None:
    if value is None:
        return None
    if not _is_number(value):
        raise IngestError(f"expected a number or null, got {value!r}", file=file, field=where)
    return None if isinstance(value, float) and not math.isfinite(value) else value


def _all_finite_floats(values: Iterable[Any]) -> bool:
    """The common case, checked at C speed: every entry a finite float."""
    values = list(values)
    return set(map(type, values)) <= {float} and all(map(math.isfinite, values))


def _finite_column(values: list[Any], file: str, where: str) -> list[Any]:
    """Numbers with non-finite ones as None; anything else is an error naming its index."""
    if _all_finite_floats(values) or set(map(type, values)) <= {int}:
        return values
    return [_finite_or_none(v, file, f"{where}[{i}]") for i, v in enumerate(values)]


def _int_column(values: list[Any], file: str, where: str) -> list[int | None]:
    values = _finite_column(values, file, where)
    if set(map(type, values)) <= {int}:
        return values
    return [None if v is None else int(v) for v in values]


def _value_column(values: list[Any], file: str, where: str) -> list[float | None]:
    """Results keep NaN (asv's skip) and None (a failure)."""
    if set(map(type, values)) <= {float}:
        return values
    for i, value in enumerate(values):
        if value is not None and not _is_number(value):
            raise IngestError(
                f"expected a number, NaN or null, got {value!r}", file=file, field=f"{where}[{i}]"
            )
    return [None if v is None else float(v) for v in values]


def _samples_column(values: list[Any], file: str, where: str) -> list[list[float] | None]:
    """Each entry a list of samples or null; non-finite samples are dropped."""
    if set(map(type, values)) <= {list} and _all_finite_floats(itertools.chain.from_iterable(values)):
        return values
    out = []
    for i, samples in enumerate(values):
        if samples is not None:
            if not isinstance(samples, list):
                raise IngestError("expected a list of samples or null", file=file, field=f"{where}[{i}]")
            if not _all_finite_floats(samples):
                samples = [
                    s for s in (_finite_or_none(s, file, f"{where}[{i}]") for s in samples) if s is not None
                ]
        out.append(samples)
    return out


def parse_results(content: bytes, file: str = "result") -> AsvResults:
    data = load_json_object(content, file)
    version = data.get("version")
    if version != SUPPORTED_RESULTS_VERSION:
        raise IngestError(
            f"asv results version {version!r} is not supported; expected {SUPPORTED_RESULTS_VERSION} "
            "(written by asv >= 0.5)",
            file=file,
            field="version",
        )
    for key, kind in (("commit_hash", str), ("env_name", str), ("result_columns", list), ("results", dict)):
        if not isinstance(data.get(key), kind):
            raise IngestError(f"missing or not a {kind.__name__}", file=file, field=key)
    columns = data["result_columns"]
    unknown = [c for c in columns if c not in RESULT_COLUMNS]
    if unknown or columns[:2] != ["result", "params"]:
        raise IngestError(f"unexpected result_columns {columns!r}", file=file, field="result_columns")
    date = data.get("date")
    if date is not None and not _is_number(date):
        raise IngestError(f"expected milliseconds since the epoch, got {date!r}", file=file, field="date")
    benchmarks = [_parse_row(name, row, columns, file) for name, row in sorted(data["results"].items())]
    return AsvResults(
        commit_hash=data["commit_hash"],
        env_name=data["env_name"],
        date_ms=int(date) if date is not None else None,
        python=str(data.get("python", "")),
        benchmarks=benchmarks,
    )


def _parse_row(name: str, row: Any, columns: list[str], file: str) -> BenchmarkResult:
    where = f"results.{name}"
    if not isinstance(row, list) or len(row) < 2 or len(row) > len(columns):
        raise IngestError(f"expected a list of 2 to {len(columns)} columns", file=file, field=where)
    cells = dict(zip(columns, row + [None] * (len(columns) - len(row)), strict=True))
    params = cells["params"]
    if not isinstance(params, list) or not all(
        isinstance(p, list) and all(isinstance(v, str) for v in p) for p in params
    ):
        raise IngestError(
            "params must be a list of lists of repr strings", file=file, field=f"{where}.params"
        )
    combos = list(itertools.product(*params)) if params else [()]
    n = len(combos)

    def per_combo(column: str) -> list[Any]:
        value = cells.get(column)
        if value is None:
            return [None] * n
        if not isinstance(value, list) or len(value) != n:
            raise IngestError(
                f"expected a list of {n} entries (one per parameter combination) or null",
                file=file,
                field=f"{where}.{column}",
            )
        return value

    values = _value_column(per_combo("result"), file, f"{where}.result")
    samples = _samples_column(per_combo("samples"), file, f"{where}.samples")
    q_25, q_75, ci_99_a, ci_99_b = (
        _finite_column(per_combo(f"stats_{c}"), file, f"{where}.stats_{c}")
        for c in ("q_25", "q_75", "ci_99_a", "ci_99_b")
    )
    number = _int_column(per_combo("stats_number"), file, f"{where}.stats_number")
    repeat = _int_column(per_combo("stats_repeat"), file, f"{where}.stats_repeat")
    parsed = list(map(ComboResult, combos, values, samples, q_25, q_75, ci_99_a, ci_99_b, number, repeat))
    started_at = _finite_or_none(cells.get("started_at"), file, f"{where}.started_at")
    duration = _finite_or_none(cells.get("duration"), file, f"{where}.duration")
    version = cells.get("version")
    if version is not None and not isinstance(version, str):
        raise IngestError("expected a string", file=file, field=f"{where}.version")
    return BenchmarkResult(
        name=name,
        version=version or "",
        started_at_ms=int(started_at) if started_at is not None else None,
        duration=float(duration) if duration is not None else None,
        combos=parsed,
    )


def parse_benchmarks(content: bytes, file: str = "benchmarks") -> dict[str, BenchmarkInfo]:
    data = load_json_object(content, file)
    infos: dict[str, BenchmarkInfo] = {}
    for name, entry in data.items():
        if name == "version":
            continue
        if not isinstance(entry, dict):
            raise IngestError("expected an object", file=file, field=name)
        param_names = entry.get("param_names", [])
        if not isinstance(param_names, list) or not all(isinstance(p, str) for p in param_names):
            raise IngestError("expected a list of strings", file=file, field=f"{name}.param_names")
        infos[name] = BenchmarkInfo(
            name=name,
            param_names=param_names,
            type=str(entry.get("type", "")),
            unit=str(entry.get("unit", "")),
            version=str(entry.get("version", "")),
        )
    return infos


def parse_machine(content: bytes, file: str = "machine") -> dict[str, str]:
    data = load_json_object(content, file)
    machine = {key: value for key, value in data.items() if key != "version"}
    if not isinstance(machine.get("machine"), str) or not machine["machine"]:
        raise IngestError("missing the machine name", file=file, field="machine")
    for key, value in machine.items():
        if not isinstance(value, str | int | float) or isinstance(value, bool):
            raise IngestError(f"expected a string, got {value!r}", file=file, field=key)
    return {key: str(value) for key, value in machine.items()}


def samples_by_case(results_dir: Path) -> dict[tuple[str, tuple[str, ...]], list[float]]:
    """(benchmark, param reprs) -> samples, for every combination with samples of the one run in an asv
    results folder."""
    runs = find_runs(results_dir)
    if len(runs) != 1:
        raise DiscoveryError(f"{results_dir} must hold exactly one run, found {len(runs)}")
    parsed = parse_results(runs[0].result.read_bytes(), runs[0].result.name)
    return {(benchmark.name, combo.param_reprs): combo.samples
            for benchmark in parsed.benchmarks for combo in benchmark.combos if combo.samples}

"""asv's own files: the v2 results file, benchmarks.json and machine.json, read into plain dataclasses."""

from __future__ import annotations

import ast
import functools
import itertools
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tewatch.ingest.asv_v1 import update_to_2
from tewatch.ingest.bounds import UNBOUNDED, UploadBounds
from tewatch.ingest.discover import DiscoveryError, find_runs
from tewatch.ingest.errors import IngestError
from tewatch.ingest.jsonfile import load_json_object
from tewatch.store.schema.limits import (
    INT32_MAX,
    epoch_ms_problem,
    int_problem,
    json_problem,
    max_chars,
    text_problem,
)
from tewatch.store.schema.models import Benchmark, Commit, Machine, Result, Run

SUPPORTED_RESULTS_VERSION = 2
OLDER_RESULTS_VERSION = 1  # asv 0.2 to 0.4: read as asv reads it, brought to version 2 (asv_v1)
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
    requirements: dict[str, str] = field(default_factory=dict)
    format_version: int = SUPPORTED_RESULTS_VERSION  # the asv results format of the file as uploaded


@dataclass
class BenchmarkInfo:
    name: str
    param_names: list[str]
    type: str
    unit: str
    version: str


@functools.lru_cache(maxsize=65536)
def decode_param(text: str) -> Any:
    """asv stores parameter values as repr() strings; bring back the Python literal where there is one.

    A literal that is no JSON value (a set, bytes, an integer beyond 64 bits, a non-finite float, a
    string with a lone surrogate) stays its repr text, like a value that is no literal at all."""
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return text
    return text if json_problem(value) else value


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _finite_or_none(value: Any, file: str, where: str) -> float | int | None:
    if value is None:
        return None
    if not _is_number(value):
        raise IngestError(f"expected a number or null, got {value!r}", file=file, field=where)
    return None if isinstance(value, float) and not math.isfinite(value) else value


def _float(value: int | float, file: str, where: str) -> float:
    """An integer as a float, refused where it is beyond a float's range."""
    try:
        return float(value)
    except OverflowError:
        raise IngestError(
            f"an integer of {len(str(value))} digits is beyond the range of a float", file=file, field=where
        ) from None


def _finite_float_or_none(value: Any, file: str, where: str) -> float | None:
    value = _finite_or_none(value, file, where)
    return None if value is None else _float(value, file, where)


def _text(value: str, file: str, where: str, column: Any = None) -> str:
    """Text the store can keep in `column` (any text without a column: no NUL, no lone surrogate)."""
    problem = text_problem(value, max_chars(column) if column is not None else None)
    if problem:
        raise IngestError(problem, file=file, field=where)
    return value


def _all_finite_floats(values: Iterable[Any]) -> bool:
    """The common case, checked at C speed: every entry a finite float."""
    values = list(values)
    return set(map(type, values)) <= {float} and all(map(math.isfinite, values))


def _finite_column(values: list[Any], file: str, where: str) -> list[float | None]:
    """Floats with non-finite ones as None; anything else is an error naming its index."""
    if _all_finite_floats(values):
        return values
    return [_finite_float_or_none(v, file, f"{where}[{i}]") for i, v in enumerate(values)]


def _int_column(values: list[Any], file: str, where: str) -> list[int | None]:
    """Whole numbers (floats truncated), non-finite ones as None, within the store's integer column."""
    if not set(map(type, values)) <= {int}:
        values = [_finite_or_none(v, file, f"{where}[{i}]") for i, v in enumerate(values)]
        values = [None if v is None else int(v) for v in values]
    present = [v for v in values if v is not None]
    if not present or (min(present) >= 0 and max(present) <= INT32_MAX):
        return values
    for i, value in enumerate(values):
        problem = value is not None and int_problem(value, 0, INT32_MAX)
        if problem:
            raise IngestError(problem, file=file, field=f"{where}[{i}]")
    return values


def _value_column(values: list[Any], file: str, where: str) -> list[float | None]:
    """Results keep NaN (asv's skip) and None (a failure); an infinite result is refused."""
    if set(map(type, values)) <= {float} and not any(map(math.isinf, values)):
        return values
    out: list[float | None] = []
    for i, value in enumerate(values):
        if value is None:
            out.append(None)
            continue
        if not _is_number(value):
            raise IngestError(
                f"expected a number, NaN or null, got {value!r}", file=file, field=f"{where}[{i}]"
            )
        value = _float(value, file, f"{where}[{i}]")
        if math.isinf(value):
            raise IngestError(
                f"{value} is not a result: expected a finite number, NaN (asv's skip) or null (a failure)",
                file=file,
                field=f"{where}[{i}]",
            )
        out.append(value)
    return out


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
                    s
                    for s in (_finite_float_or_none(s, file, f"{where}[{i}]") for s in samples)
                    if s is not None
                ]
        out.append(samples)
    return out


def parse_results(content: bytes, file: str = "result", bounds: UploadBounds = UNBOUNDED) -> AsvResults:
    data = load_json_object(content, file)
    version = data.get("version")
    if isinstance(version, bool) or version not in (OLDER_RESULTS_VERSION, SUPPORTED_RESULTS_VERSION):
        raise IngestError(
            f"asv results version {version!r} is not supported; expected {SUPPORTED_RESULTS_VERSION} "
            f"(written by asv >= 0.5) or {OLDER_RESULTS_VERSION} (asv 0.2 to 0.4)",
            file=file,
            field="version",
        )
    if version == OLDER_RESULTS_VERSION:
        data = update_to_2(data, file)
    for key, kind in (("commit_hash", str), ("env_name", str), ("result_columns", list), ("results", dict)):
        if not isinstance(data.get(key), kind):
            raise IngestError(f"missing or not a {kind.__name__}", file=file, field=key)
    _text(data["commit_hash"], file, "commit_hash", Commit.sha)
    _text(data["env_name"], file, "env_name", Run.asv_env_name)
    columns = data["result_columns"]
    unknown = [c for c in columns if c not in RESULT_COLUMNS]
    if unknown or columns[:2] != ["result", "params"]:
        raise IngestError(f"unexpected result_columns {columns!r}", file=file, field="result_columns")
    date = data.get("date")
    if date is not None:
        date = _epoch_ms(date, file, "date")
    requirements = data.get("requirements") or {}
    if not isinstance(requirements, dict):
        raise IngestError("not an object", file=file, field="requirements")
    benchmarks: list[BenchmarkResult] = []
    count = 0
    for name, row in sorted(data["results"].items()):
        benchmarks.append(_parse_row(name, row, columns, file, bounds, count))
        count += len(benchmarks[-1].combos)
    return AsvResults(
        commit_hash=data["commit_hash"],
        env_name=data["env_name"],
        date_ms=date,
        python=str(data.get("python", "")),
        benchmarks=benchmarks,
        requirements={str(k): str(v) for k, v in requirements.items()},
        format_version=int(version),
    )


def _epoch_ms(value: Any, file: str, where: str) -> int:
    """asv's times: milliseconds since the epoch, within the store's window."""
    problem = (
        epoch_ms_problem(value)
        if _is_number(value)
        else f"expected milliseconds since the epoch, got {value!r}"
    )
    if problem:
        raise IngestError(problem, file=file, field=where)
    return int(value)


def _parse_row(
    name: str, row: Any, columns: list[str], file: str, bounds: UploadBounds, so_far: int
) -> BenchmarkResult:
    where = f"results.{name}"
    _text(name, file, where, Benchmark.name)
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
    for i, reprs in enumerate(params):
        for j, text in enumerate(reprs):
            _text(text, file, f"{where}.params[{i}][{j}]")
    sizes = [len(p) for p in params]
    origin = f"{name}: {' x '.join(map(str, sizes)) or 1} parameter combinations"
    bounds.check_results(so_far + math.prod(sizes), file, f"{where}.params", origin)
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
    if started_at is not None:
        started_at = _epoch_ms(started_at, file, f"{where}.started_at")
    duration = _finite_float_or_none(cells.get("duration"), file, f"{where}.duration")
    version = cells.get("version")
    if version is not None and not isinstance(version, str):
        raise IngestError("expected a string", file=file, field=f"{where}.version")
    if version:
        _text(version, file, f"{where}.version", Result.benchmark_version)
    return BenchmarkResult(
        name=name,
        version=version or "",
        started_at_ms=started_at,
        duration=duration,
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
        for i, param_name in enumerate(param_names):
            _text(param_name, file, f"{name}.param_names[{i}]")
        info = BenchmarkInfo(
            name=name,
            param_names=param_names,
            type=str(entry.get("type", "")),
            unit=str(entry.get("unit", "")),
            version=str(entry.get("version", "")),
        )
        for key in ("type", "unit", "version"):
            _text(getattr(info, key), file, f"{name}.{key}", getattr(Benchmark, key))
        infos[name] = info
    return infos


def parse_machine(content: bytes, file: str = "machine") -> dict[str, str]:
    data = load_json_object(content, file)
    machine = {key: value for key, value in data.items() if key != "version"}
    if not isinstance(machine.get("machine"), str) or not machine["machine"]:
        raise IngestError("missing the machine name", file=file, field="machine")
    for key, value in machine.items():
        if not isinstance(value, str | int | float) or isinstance(value, bool):
            raise IngestError(f"expected a string, got {value!r}", file=file, field=key)
    machine = {key: str(value) for key, value in machine.items()}
    for key, value in machine.items():
        _text(key, file, key)
        _text(value, file, key, _MACHINE_TEXT.get(key))
    for key in ("gpu_count", "gpu_memory_mb"):
        if machine.get(key):
            try:
                number = int(machine[key])
            except ValueError:
                message = f"expected an integer, got {machine[key]!r}"
                raise IngestError(message, file=file, field=key) from None
            problem = int_problem(number, 0, INT32_MAX)
            if problem:
                raise IngestError(problem, file=file, field=key)
    return machine


# machine.json keys kept in text columns of their own (the others go to a JSON column)
_MACHINE_TEXT = {
    "machine": Machine.name,
    **{
        key: getattr(Machine, key)
        for key in (
            "gpu_model",
            "compute_capability",
            "driver",
            "cuda",
            "cublaslt",
            "cudnn",
            "cpu",
            "arch",
            "os",
            "ram",
        )
    },
}


def samples_by_case(results_dir: Path) -> dict[tuple[str, tuple[str, ...]], list[float]]:
    """(benchmark, param reprs) -> samples, for every combination with samples of the one run in an asv
    results folder."""
    runs = find_runs(results_dir)
    if len(runs) != 1:
        raise DiscoveryError(f"{results_dir} must hold exactly one run, found {len(runs)}")
    parsed = parse_results(runs[0].result.read_bytes(), runs[0].result.name)
    return {
        (benchmark.name, combo.param_reprs): combo.samples
        for benchmark in parsed.benchmarks
        for combo in benchmark.combos
        if combo.samples
    }

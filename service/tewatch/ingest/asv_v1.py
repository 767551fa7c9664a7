"""asv's results format version 1 (asv 0.2 to 0.4) brought to version 2, as asv 0.6's `asv update` does.

Follows `asv.results.Results.update_to_2` (asv 0.6.6) step by step, so a file reads here as asv reads
it: a result is a bare value or a {result, params, stats, samples} object; the statistics become the
`stats_*` columns and, like the durations, keep 5 significant digits; a file without `env_name` (asv
before 0.3) gets the name asv gives it. Shapes asv would trip over are an IngestError naming the field.
"""

from __future__ import annotations

from typing import Any

from tewatch.core.asv_env import env_name_without_tool
from tewatch.ingest.errors import IngestError

# (column, what it is read from, how a stats object gives it), in asv's order
_COLUMNS: tuple[tuple[str, str, str | None], ...] = (
    ("result", "result", None),
    ("params", "params", None),
    ("version", "benchmark_version", None),
    ("started_at", "started_at", None),
    ("duration", "duration", None),
    ("stats_ci_99_a", "stats", "ci_99_a"),
    ("stats_ci_99_b", "stats", "ci_99_b"),
    ("stats_q_25", "stats", "q_25"),
    ("stats_q_75", "stats", "q_75"),
    ("stats_number", "stats", "number"),
    ("stats_repeat", "stats", "repeat"),
    ("samples", "samples", None),
    ("profile", "profiles", None),
)
_TRUNCATED = {"duration"} | {c for c, _, stat in _COLUMNS if stat}


def update_to_2(data: dict[str, Any], file: str) -> dict[str, Any]:
    """The version-2 document asv writes for a version-1 one; nothing of `data` is changed."""
    for key in ("commit_hash", "date", "params", "python", "requirements", "results"):
        if key not in data:
            raise IngestError("missing in a version 1 results file", file=file, field=key)
    results = _object(data["results"], file, "results")
    per_benchmark: dict[str, dict[str, Any]] = {
        "result": {},
        "params": {},
        "stats": {},
        "samples": {},
        "benchmark_version": _object(data.get("benchmark_version", {}), file, "benchmark_version"),
        "started_at": _object(data.get("started_at", {}), file, "started_at"),
        "duration": _object(data.get("duration", {}), file, "duration"),
        "profiles": _object(data.get("profiles", {}), file, "profiles"),
    }
    for name, value in results.items():
        entry = _entry(value, file, f"results.{name}")
        for key in ("result", "params", "stats", "samples"):
            per_benchmark[key][name] = entry[key]
    rows = {name: _row(name, per_benchmark, file) for name in sorted(results)}
    return {
        "commit_hash": data["commit_hash"],
        "date": data["date"],
        "env_name": data["env_name"] if "env_name" in data else _env_name(data, file),
        "params": data["params"],
        "python": data["python"],
        "requirements": data["requirements"],
        "env_vars": data.get("env_vars", {}),
        "result_columns": [column for column, _, _ in _COLUMNS],
        "results": rows,
        "durations": {k: v for k, v in per_benchmark["duration"].items() if k.startswith("<")},
        "version": 2,
    }


def _object(value: Any, file: str, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise IngestError("expected an object", file=file, field=where)
    return value


def _entry(value: Any, file: str, where: str) -> dict[str, Any]:
    """One benchmark's {result, params, stats, samples}: asv 0.2 stored a bare value, later asv an
    object whose result and stats are lists, one entry per parameter combination."""
    if not isinstance(value, dict):
        return {"result": [value], "samples": None, "stats": None, "params": []}
    if "result" not in value:
        raise IngestError("missing in a version 1 result", file=file, field=f"{where}.result")
    entry = {"samples": None, "stats": None, "params": [], **value}
    if not isinstance(entry["result"], list):
        entry["result"] = [entry["result"]]
    if "stats" in value and not isinstance(value["stats"], list):
        entry["stats"] = [value["stats"]]
    return entry


def _row(name: str, per_benchmark: dict[str, dict[str, Any]], file: str) -> list[Any]:
    row: list[Any] = []
    for column, source, stat in _COLUMNS:
        value = per_benchmark[source].get(name)
        if stat is not None and value is not None:
            where = f"results.{name}.stats"
            value = [None if z is None else _stat(z, stat, file, where) for z in _list(value, file, where)]
        if column in _TRUNCATED:
            value = _five_digits(value)
        if column == "params" and value is None:
            value = []
        if column != "params" and isinstance(value, list) and all(x is None for x in value):
            value = None
        row.append(value)
    while row and row[-1] is None:
        row.pop()
    return row


def _list(value: Any, file: str, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise IngestError("expected a list", file=file, field=where)
    return value


def _stat(stats: Any, stat: str, file: str, where: str) -> Any:
    """One statistic of one combination's stats object; the 99 % interval is a pair in version 1."""
    stats = _object(stats, file, where)
    if stat.startswith("ci_99_"):
        interval = stats.get("ci_99")
        if not isinstance(interval, list) or len(interval) != 2:
            raise IngestError("expected ci_99, a pair of numbers", file=file, field=f"{where}.ci_99")
        return interval[0] if stat == "ci_99_a" else interval[1]
    return stats.get(stat)


def _five_digits(item: Any) -> Any:
    """asv's truncate_float_list: a float, or the floats of a list, kept to 5 significant digits (the
    statistics and durations asv writes nest no deeper; anything deeper is left for validation)."""
    if isinstance(item, list):
        return [float(f"{x:.4e}") if isinstance(x, float) else x for x in item]
    return float(f"{item:.4e}") if isinstance(item, float) else item


def _env_name(data: dict[str, Any], file: str) -> str:
    """The name files written before asv stored `env_name` are filed under."""
    requirements = _object(data["requirements"], file, "requirements")
    return env_name_without_tool(data["python"], requirements)

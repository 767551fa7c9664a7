"""JSON rows from the API into DataFrames with one declared dtype per column.

Kinds: `int` (Int64, nullable), `float` (float64, NaN for missing), `str` (string), `cat` (category: few
distinct values, e.g. backend or verdict), `time` (datetime64[ns, UTC]; the API's times are UTC, with or
without a zone), `bool` (boolean, nullable) and `json` (a nested value kept as JSON text, so that CSV and
Parquet hold it as it is). Columns the service adds later come after the declared ones, as pandas reads
them (nested values as JSON text too)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

Spec = Sequence[tuple[str, str]]

RESULT_STATUSES = ("ok", "failed", "skipped", "unsupported", "timeout")
VERDICT_STATUSES = ("pass", "fail_accuracy", "error", "unsupported", "timeout", "oom")

CASE_LABELS: Spec = (
    ("case_name", "cat"),
    ("gpu_model", "cat"),
    ("compute_capability", "cat"),
    ("backend", "cat"),
    ("recipe", "cat"),
    ("mode", "cat"),
    ("rank", "int"),
    ("world_size", "int"),
)

RUNS: Spec = (
    ("run_id", "int"),
    ("commit_sha", "str"),
    ("committed_at", "time"),
    ("branch", "cat"),
    ("pr_number", "int"),
    ("merge_base_sha", "str"),
    ("repo", "cat"),
    ("machine", "cat"),
    ("machine_id", "int"),
    ("gpu_model", "cat"),
    ("compute_capability", "cat"),
    ("te_version", "cat"),
    ("te_commit", "str"),
    ("torch", "cat"),
    ("python", "cat"),
    ("profile", "cat"),
    ("asv_env_name", "str"),
    ("started_at", "time"),
    ("finished_at", "time"),
    ("uploaded_at", "time"),
    ("digest", "str"),
    *((f"results_{status}", "int") for status in RESULT_STATUSES),
    *((f"verdicts_{status}", "int") for status in VERDICT_STATUSES),
)

SERIES: Spec = (
    ("series_id", "int"),
    ("benchmark", "cat"),
    ("unit", "cat"),
    ("case_id", "int"),
    *CASE_LABELS,
    ("machine", "cat"),
    ("params", "json"),
    ("labels", "json"),
)

SAMPLES: Spec = (
    ("series_id", "int"),
    ("run_id", "int"),
    ("commit_sha", "str"),
    ("committed_at", "time"),
    ("te_version", "cat"),
    ("machine", "cat"),
    ("branch", "cat"),
    ("pr_number", "int"),
    ("benchmark", "cat"),
    ("unit", "cat"),
    *CASE_LABELS,
    ("status", "cat"),
    ("verdict", "cat"),
    ("value", "float"),
    ("sample_index", "int"),
    ("sample", "float"),
    ("sm_clock_mhz_min", "float"),
    ("mem_clock_mhz_min", "float"),
    ("power_w_max", "float"),
    ("temperature_c_max", "float"),
    ("throttle_reasons", "cat"),
)

VERDICTS: Spec = (
    ("case_id", "int"),
    *CASE_LABELS,
    ("status", "cat"),
    ("check", "cat"),
    ("metric", "cat"),
    ("metric_value", "float"),
    ("tolerance", "float"),
    ("exception_class", "cat"),
    ("message", "str"),
    ("reason", "str"),
    ("traceback_head", "str"),
    ("run_id", "int"),
    ("commit_sha", "str"),
    ("branch", "cat"),
    ("uploaded_at", "time"),
    ("params", "json"),
    ("labels", "json"),
    ("extra_checks", "json"),
)

SERIES_LABELS: Spec = (("benchmark", "cat"), *CASE_LABELS)

COMPARISONS: Spec = (
    ("comparison_id", "int"),
    ("pr_number", "int"),
    ("head_run_id", "int"),
    ("base_run_ids", "json"),
    ("series_id", "int"),
    *SERIES_LABELS,
    ("verdict", "cat"),
    ("baseline", "float"),
    ("head", "float"),
    ("effect", "float"),
    ("ci_low", "float"),
    ("ci_high", "float"),
    ("p_value", "float"),
    ("q_value", "float"),
    ("n_base", "int"),
    ("n_head", "int"),
    ("between_run_sigma", "float"),
    ("noise_source", "cat"),
    ("rounds", "int"),
    ("modes", "json"),
    ("primary", "bool"),
    ("min_effect", "float"),
    ("detector_version", "cat"),
)

CHANGE_POINTS: Spec = (
    ("change_point_id", "int"),
    ("series_id", "int"),
    ("series_key", "str"),
    *SERIES_LABELS,
    ("branch", "cat"),
    ("run_id", "int"),
    ("commit_sha", "str"),
    ("committed_at", "time"),
    ("before_commit_sha", "str"),
    ("first_possible_commit_sha", "str"),
    ("direction", "cat"),
    ("baseline", "float"),
    ("level_after", "float"),
    ("lower_limit", "float"),
    ("upper_limit", "float"),
    ("effect", "float"),
    ("z", "float"),
    ("environment_shift", "bool"),
    ("environment_changes", "json"),
    ("detector_version", "cat"),
    ("active", "bool"),
    ("created_at", "time"),
)

ALERTS: Spec = (
    ("alert_id", "int"),
    ("kind", "cat"),
    ("status", "cat"),
    ("title", "str"),
    ("series_id", "int"),
    ("case_id", "int"),
    *SERIES_LABELS,
    ("change_point_id", "int"),
    ("comparison_id", "int"),
    ("verdict_id", "int"),
    ("run_id", "int"),
    ("branch", "cat"),
    ("pr_number", "int"),
    ("effect", "float"),
    ("details", "json"),
    ("created_at", "time"),
    ("updated_at", "time"),
)


def _json_text(value: Any) -> Any:
    return None if value is None else json.dumps(value, sort_keys=True)


def _number(value: Any) -> float:
    return np.nan if value is None or isinstance(value, bool) else float(value)


def column(values: list[Any], kind: str) -> pd.Series:
    if kind == "int":
        return pd.Series(pd.array(values, dtype="Int64"))
    if kind == "float":
        return pd.Series([_number(v) for v in values], dtype="float64")
    if kind == "str":
        return pd.Series(values, dtype="string")
    if kind == "cat":
        text = [None if v is None else str(v) for v in values]
        # categories are text, sorted, even when every value is missing (Parquet then keeps a category)
        categories = pd.Index(sorted({t for t in text if t is not None}), dtype=str)
        return pd.Series(pd.Categorical(text, categories=categories))
    if kind == "time":
        times = pd.to_datetime(pd.Series(values, dtype=object), utc=True, format="ISO8601")
        return times.astype("datetime64[ns, UTC]")
    if kind == "bool":
        return pd.Series(pd.array(values, dtype="boolean"))
    if kind == "json":
        return pd.Series([_json_text(v) for v in values], dtype="string")
    raise ValueError(f"unknown column kind {kind!r}")


def frame(rows: Iterable[Mapping[str, Any]], spec: Spec) -> pd.DataFrame:
    """A DataFrame of `rows` with the columns of `spec` first, each of its kind, then any others."""
    rows = list(rows)
    declared = [name for name, _ in spec]
    extra = [name for name in dict.fromkeys(k for row in rows for k in row) if name not in set(declared)]
    data = {name: column([row.get(name) for row in rows], kind) for name, kind in spec}
    for name in extra:
        values = [row.get(name) for row in rows]
        if any(isinstance(v, dict | list) for v in values):
            data[name] = column(values, "json")
        else:
            data[name] = pd.Series(values).convert_dtypes()
    return pd.DataFrame(data, index=pd.RangeIndex(len(rows)))


def gpu_state_columns(state: Mapping[str, Any] | None) -> dict[str, Any]:
    """A case's GPU state (NVML's readings around it) as the samples frame's columns: the lowest clocks,
    the highest power and temperature, and every throttle reason seen, comma-separated."""
    state = state or {}

    def numbers(key: str) -> list[float]:
        values = state.get(key)
        return (
            [float(v) for v in values if isinstance(v, int | float) and not isinstance(v, bool)]
            if isinstance(values, list)
            else []
        )

    def pick(key: str, how) -> float | None:
        found = numbers(key)
        return how(found) if found else None

    reasons = state.get("throttle_reasons")
    reasons = sorted({str(r) for r in reasons}) if isinstance(reasons, list) and reasons else None
    return {
        "sm_clock_mhz_min": pick("sm_clock_mhz", min),
        "mem_clock_mhz_min": pick("mem_clock_mhz", min),
        "power_w_max": pick("power_w", max),
        "temperature_c_max": pick("temperature_c", max),
        "throttle_reasons": ",".join(reasons) if reasons else None,
    }


def sample_rows(base: Mapping[str, Any], samples: list[Any] | None) -> Iterable[dict[str, Any]]:
    """One row per sample of a result; a result without samples (a metric, or a result that failed or
    was not run) is one row whose sample_index and sample are empty."""
    numbers = [
        (i, s) for i, s in enumerate(samples or []) if isinstance(s, int | float) and not isinstance(s, bool)
    ]
    if not numbers:
        yield {**base, "sample_index": None, "sample": None}
        return
    for index, value in numbers:
        yield {**base, "sample_index": index, "sample": value}

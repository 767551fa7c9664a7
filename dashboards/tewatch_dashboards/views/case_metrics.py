"""A case's memory and error values as its page shows them: the memory table (setup, peaks, leak slope with
its standard error, steady state, each against the run before) and the error metrics with the tolerance of
the check that measured them."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Connection

from tewatch.detect.drift import HIGHER_IS_BETTER, ErrorMetric
from tewatch.pipeline.memory_numerics import LEAK_STDERR_METRIC, tolerance_of
from tewatch.store.reads.case_metric_reads import CheckedValue, MetricValues, case_metric_values, run_checks

MEMORY_UNITS = ("bytes", "bytes/step")
ERROR_UNITS = ("abs error", "rel error", "dB")
# the memory table's rows in this order, then any other byte metric of the case by name
MEMORY_LABELS = {
    "setup_allocated_bytes": "after setup",
    "peak_allocated_bytes": "peak allocated",
    "peak_reserved_bytes": "peak reserved",
    "leak_bytes_per_step": "leak slope",
    "steady_allocated_bytes": "steady state",
    "activation_bytes": "activations",
    "activation_bytes_offloaded": "activations, CPU offload",
}


@dataclass(frozen=True)
class MemoryRow:
    label: str
    values: MetricValues
    stderr: MetricValues | None = None  # the leak slope's standard error


@dataclass(frozen=True)
class ErrorRow:
    metric: ErrorMetric
    values: MetricValues
    tolerance: float | None  # of the check that measured the latest value, where one did

    @property
    def higher_is_better(self) -> bool:
        return self.metric.kind in HIGHER_IS_BETTER

    @property
    def used(self) -> float | None:
        """The latest value as a share of its tolerance: how near the limit it walked."""
        if self.tolerance is None or self.values.latest is None or self.tolerance <= 0:
            return None
        return self.values.latest / self.tolerance


def memory_rows(conn: Connection, case_id: int, branch: str) -> list[MemoryRow]:
    found = {v.metric: v for v in case_metric_values(conn, case_id, MEMORY_UNITS, branch)}
    stderr = found.pop(LEAK_STDERR_METRIC, None)
    order = list(MEMORY_LABELS)
    named = sorted(found, key=lambda m: (order.index(m) if m in order else len(order), m))
    return [
        MemoryRow(
            MEMORY_LABELS.get(metric, metric.replace("_", " ")),
            found[metric],
            stderr if metric == "leak_bytes_per_step" else None,
        )
        for metric in named
    ]


def checks_as_tuples(checks: list[CheckedValue]) -> list[tuple[str, float, float]]:
    return [(c.metric, c.value, c.tolerance) for c in checks]


def error_rows(conn: Connection, case_id: int, branch: str) -> list[ErrorRow]:
    """The case's error metrics, by what they compare and their kind; each with the tolerance of the check
    of its latest run that found the same value (the check names its kind, not what it compared)."""
    values = [
        (metric, v)
        for v in case_metric_values(conn, case_id, ERROR_UNITS, branch)
        if (metric := ErrorMetric.parse(v.metric)) is not None
    ]
    checks = run_checks(conn, case_id, sorted({v.latest_run_id for _, v in values if v.latest_run_id}))
    rows = []
    for metric, v in values:
        tolerance = None
        if v.latest is not None and v.latest_run_id is not None:
            tolerance = tolerance_of(metric, v.latest, checks_as_tuples(checks.get(v.latest_run_id, [])))
        rows.append(ErrorRow(metric, v, tolerance))
    return sorted(rows, key=lambda r: (r.metric.what, r.metric.reference, r.metric.kind))

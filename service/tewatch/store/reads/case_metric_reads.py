"""A case's one-value record metrics (bytes, error values) as the case page shows them: each series' latest
and previous value under the branch filter; and the checks a run's verdict held to a tolerance, which the
pages draw beside the error values they measured.

Every read is bounded: two results per series, the verdicts of the runs a chart draws.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from sqlalchemy import Connection, select

from tewatch.store.reads.case_reads import branch_clause
from tewatch.store.reads.commit_order import newest_commit_first
from tewatch.store.reads.key_lists import in_key_list
from tewatch.store.schema.models import Benchmark, Commit, Result, ResultStatus, Run, Series, Verdict


@dataclass(frozen=True)
class MetricValues:
    """One series `<case>.<metric>` of a case: its latest value and the one before it (None where the
    branch filter holds fewer results), with their runs."""

    series_id: int
    metric: str  # the benchmark name's last part, `peak_allocated_bytes`
    unit: str
    latest: float | None
    previous: float | None
    latest_run_id: int | None
    previous_run_id: int | None

    @property
    def change(self) -> float | None:
        if self.latest is None or self.previous is None:
            return None
        return self.latest - self.previous

    @property
    def share(self) -> float | None:
        """The change as a share of the previous value (None where that is 0 or missing)."""
        change = self.change
        return change / self.previous if change is not None and self.previous else None


def case_metric_values(
    conn: Connection, case_id: int, units: Collection[str], branch: str | None
) -> list[MetricValues]:
    """The case's series in `units`, by metric name, each with its newest two ok results under the branch
    filter (branch_clause)."""
    series_rows = conn.execute(
        select(Series.id, Benchmark.name, Benchmark.unit)
        .join(Benchmark, Benchmark.id == Series.benchmark_id)
        .where(Series.case_id == case_id, Benchmark.unit.in_(list(units)))
        .order_by(Benchmark.name)
    ).all()
    found = []
    for series_id, name, unit in series_rows:
        newest = conn.execute(
            select(Result.value, Result.run_id)
            .join(Run, Run.id == Result.run_id)
            .join(Commit, Commit.id == Run.commit_id)
            .where(Result.series_id == series_id, Result.status == ResultStatus.ok, branch_clause(branch))
            .order_by(*newest_commit_first(Result.run_id))
            .limit(2)
        ).all()
        (latest, latest_run), (previous, previous_run) = [*newest, (None, None), (None, None)][:2]
        found.append(
            MetricValues(series_id, name.rpartition(".")[2], unit, latest, previous, latest_run, previous_run)
        )
    return found


@dataclass(frozen=True)
class CheckedValue:
    """A check of a verdict that held a value to a tolerance: `metric` is its kind (`rel_l2`), the name
    the check gives it, not what it compared."""

    check: str
    metric: str
    value: float
    tolerance: float


def _checked(entry: object) -> CheckedValue | None:
    if not isinstance(entry, dict):
        return None
    metric, value, tolerance = entry.get("metric"), entry.get("value"), entry.get("tolerance")
    if not isinstance(metric, str) or isinstance(value, bool) or isinstance(tolerance, bool):
        return None
    if not isinstance(value, int | float) or not isinstance(tolerance, int | float):
        return None
    if not (math.isfinite(value) and math.isfinite(tolerance)):
        return None
    return CheckedValue(str(entry.get("check") or ""), metric, float(value), float(tolerance))


def run_checks(conn: Connection, case_id: int, run_ids: Sequence[int]) -> dict[int, list[CheckedValue]]:
    """Run id -> the checks with a value and a tolerance of the case's verdict in that run: the verdict's
    own and its further checks (`extra_checks`)."""
    if not run_ids:
        return {}
    rows = conn.execute(
        select(Verdict.run_id, Verdict.check, Verdict.metric, Verdict.metric_value, Verdict.tolerance)
        .add_columns(Verdict.extra_checks)
        .where(Verdict.case_id == case_id, in_key_list(conn, Verdict.run_id, list(run_ids), "check_runs"))
    )
    found: dict[int, list[CheckedValue]] = {}
    for run_id, check, metric, value, tolerance, extra in rows:
        own = {"check": check, "metric": metric, "value": value, "tolerance": tolerance}
        checked = [
            c
            for entry in [own, *(extra if isinstance(extra, list) else [])]
            if (c := _checked(entry)) is not None
        ]
        if checked:
            found[run_id] = checked
    return found

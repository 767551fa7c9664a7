"""What detection recorded, as typed rows: perf signals per case, a series' change points, a pull request's
newest comparisons, alerts with their case and status changes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import Connection, func, select
from sqlalchemy.orm import Session

from tewatch.store.reads.alert_queries import LIVE_STATES, list_alerts
from tewatch.store.reads.key_lists import in_key_list
from tewatch.store.reads.table_rows import (
    AlertFacts,
    AlertStatusChangeFacts,
    PrComparisonFacts,
    columns,
    facts_of,
    row_of,
)
from tewatch.store.schema.alert_models import (
    Alert,
    AlertKind,
    AlertStatus,
    AlertStatusChange,
    Detection,
    PrComparison,
)
from tewatch.store.schema.models import Benchmark, Case, Series


@dataclass(frozen=True)
class PerfSignal:
    kind: str  # "regression" | "improvement"
    effect: float | None


def perf_signals(conn: Connection, case_ids: Sequence[int]) -> dict[int, PerfSignal]:
    """Per case: an open (or acknowledged) regression alert, else a standing improvement on its series.

    An improvement stands when the newest active detection of any of the case's series is one.
    """
    if not case_ids:
        return {}
    wanted = set(case_ids)
    signals: dict[int, PerfSignal] = {}
    # live alerts are few, however many cases there are: read them all, keep the wanted cases'
    for case_id, effect in conn.execute(
        select(func.coalesce(Alert.case_id, Series.case_id), Alert.effect)
        .outerjoin(Series, Series.id == Alert.series_id)
        .where(
            Alert.kind == AlertKind.regression,
            Alert.status.in_(LIVE_STATES),
            Alert.pr_number.is_(None),
        )
        .order_by(Alert.id)
    ):
        if case_id in wanted and case_id not in signals:
            signals[case_id] = PerfSignal("regression", effect)
    newest = (
        select(Series.case_id, func.max(Detection.id).label("detection_id"))
        .join(Detection, Detection.series_id == Series.id)
        .where(in_key_list(conn, Series.case_id, list(case_ids), "case_ids"), Detection.active.is_(True))
        .group_by(Series.case_id)
        .subquery()
    )
    for case_id, direction, effect in conn.execute(
        select(newest.c.case_id, Detection.direction, Detection.effect).join(
            Detection, Detection.id == newest.c.detection_id
        )
    ):
        if case_id not in signals and direction == "improvement":
            signals[case_id] = PerfSignal("improvement", effect)
    return signals


@dataclass(frozen=True)
class StoredChangePoint:
    run_id: int
    baseline: float
    level_after: float
    lower_limit: float
    upper_limit: float
    effect: float
    direction: str
    environment_shift: bool


def active_change_points(conn: Connection, series_id: int, branch: str = "") -> list[StoredChangePoint]:
    """The series' active detections (of `branch` where one is given), by run id."""
    statement = select(
        Detection.run_id,
        Detection.baseline,
        Detection.level_after,
        Detection.lower_limit,
        Detection.upper_limit,
        Detection.effect,
        Detection.direction,
        Detection.environment_shift,
    ).where(Detection.series_id == series_id, Detection.active.is_(True))
    if branch:
        statement = statement.where(Detection.branch == branch)
    return [StoredChangePoint(*row) for row in conn.execute(statement.order_by(Detection.run_id))]


@dataclass(frozen=True)
class PrVerdict:
    """A comparison with its case and benchmark (None where its series is gone)."""

    comparison: PrComparisonFacts
    case_id: int | None
    case_name: str | None
    params: dict | None
    gpu_model: str | None
    benchmark: str | None
    unit: str | None


def pr_verdicts(conn: Connection, number: int) -> list[PrVerdict]:
    """The newest comparison of each series in the pull request (a re-run supersedes older ones)."""
    newest = (
        select(func.max(PrComparison.id))
        .where(PrComparison.pr_number == number)
        .group_by(PrComparison.series_key)
    )
    comparison_columns = columns(PrComparisonFacts)
    n = len(comparison_columns)
    rows = conn.execute(
        select(
            *comparison_columns,
            Case.id,
            Case.case_name,
            Case.params,
            Case.gpu_model,
            Benchmark.name,
            Benchmark.unit,
        )
        .outerjoin(Series, Series.id == PrComparison.series_id)
        .outerjoin(Case, Case.id == Series.case_id)
        .outerjoin(Benchmark, Benchmark.id == Series.benchmark_id)
        .where(PrComparison.id.in_(newest))
    )
    return [PrVerdict(row_of(PrComparisonFacts, row[:n]), *row[n:]) for row in rows]


@dataclass(frozen=True)
class AlertRow:
    alert: AlertFacts
    case_name: str | None
    params: dict
    changes: list[AlertStatusChangeFacts]


def alert_rows(
    session: Session, statuses: Sequence[AlertStatus], limit: int = 200, kind: str = ""
) -> list[AlertRow]:
    """The alerts of `statuses` in the API's order (alert_queries.list_alerts), with their case and their
    status changes, oldest first."""
    found = [
        facts_of(AlertFacts, a)
        for a in list_alerts(session, kind=kind or None, limit=limit, statuses=statuses)
    ]
    ids = [a.id for a in found]
    if not ids:
        return []
    conn = session.connection()
    names: dict[int, tuple[str | None, dict]] = {}
    for alert_id, name, params in conn.execute(
        select(Alert.id, Case.case_name, Case.params)
        .outerjoin(Series, Series.id == Alert.series_id)
        .outerjoin(Case, Case.id == func.coalesce(Alert.case_id, Series.case_id))
        .where(Alert.id.in_(ids))
    ):
        names[alert_id] = (name, params or {})
    changes: dict[int, list[AlertStatusChangeFacts]] = {i: [] for i in ids}
    for row in conn.execute(
        select(*columns(AlertStatusChangeFacts))
        .where(AlertStatusChange.alert_id.in_(ids))
        .order_by(AlertStatusChange.id)
    ):
        change = row_of(AlertStatusChangeFacts, row)
        changes[change.alert_id].append(change)
    return [AlertRow(a, *names.get(a.id, (None, {})), changes[a.id]) for a in found]


def alert_counts(conn: Connection) -> dict[str, int]:
    """Alerts per status."""
    return {
        status.value if hasattr(status, "value") else str(status): n
        for status, n in conn.execute(select(Alert.status, func.count()).group_by(Alert.status))
    }

"""What detection has to say to the pages: perf signals, change points and baselines, PR verdicts, alerts.

Change points on a chart are the stored detections of the series (what alerts were raised from); a series
that detection has not looked at yet gets the same detector run on the points the page shows, marked as
computed on view.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from tewatch.detect.changepoint import detect_change_points
from tewatch.detect.config import ChangePointConfig
from tewatch.detect.direction import direction_of
from tewatch.store.alert_models import (
    Alert,
    AlertKind,
    AlertStatusChange,
    Detection,
    PrComparison,
)
from tewatch.store.alert_queries import CLOSED_STATES, LIVE_STATES, list_alerts
from tewatch.store.key_lists import in_key_list
from tewatch.store.models import Benchmark, Case, Series

if TYPE_CHECKING:
    from tewatch_dashboards.queries import SeriesHeader, SeriesPoint

DETECTOR = ChangePointConfig()
MIN_EFFECT = DETECTOR.min_effect


@dataclass(frozen=True)
class PerfSignal:
    kind: str  # "regression" | "improvement"
    effect: float | None


def perf_signals(session: Session, case_ids: list[int]) -> dict[int, PerfSignal]:
    """Per case: an open (or acknowledged) regression alert, else a standing improvement on its series.

    An improvement stands when the newest active detection of any of the case's series is one.
    """
    if not case_ids:
        return {}
    wanted = set(case_ids)
    signals: dict[int, PerfSignal] = {}
    # live alerts are few, however many cases there are: read them all, keep the wanted cases'
    for case_id, effect in session.execute(
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
        .where(
            in_key_list(session.connection(), Series.case_id, case_ids, "case_ids"),
            Detection.active.is_(True),
        )
        .group_by(Series.case_id)
        .subquery()
    )
    for case_id, direction, effect in session.execute(
        select(newest.c.case_id, Detection.direction, Detection.effect).join(
            Detection, Detection.id == newest.c.detection_id
        )
    ):
        if case_id not in signals and direction == "improvement":
            signals[case_id] = PerfSignal("improvement", effect)
    return signals


# ------------------------------------------------------------------------------------- change points


@dataclass(frozen=True)
class ChangePointView:
    x: int  # position of the first point at the new level
    before_x: int  # position of the last point at the old level
    run_id: int
    sha: str
    baseline: float
    level_after: float
    lower: float
    upper: float
    effect: float
    direction: str  # "regression" | "improvement"
    source: str  # "stored" (what detection recorded) | "computed on view"
    environment_shift: bool = False


def change_points(
    session: Session,
    header: SeriesHeader,
    points: list[SeriesPoint],
    values: list[float | None],
    offset: int,
    branch: str = "",
) -> list[ChangePointView]:
    position = {p.run_id: i for i, p in enumerate(points)}
    stmt = select(Detection).where(Detection.series_id == header.series_id, Detection.active.is_(True))
    if branch:
        stmt = stmt.where(Detection.branch == branch)
    stored = list(session.scalars(stmt.order_by(Detection.run_id)))
    if stored:
        out = []
        for d in stored:
            i = position.get(d.run_id)
            if i is None:
                continue
            out.append(
                ChangePointView(
                    x=offset + i,
                    before_x=offset + max(i - 1, 0),
                    run_id=d.run_id,
                    sha=points[i].sha,
                    baseline=d.baseline,
                    level_after=d.level_after,
                    lower=d.lower_limit,
                    upper=d.upper_limit,
                    effect=d.effect,
                    direction=d.direction,
                    source="stored",
                    environment_shift=d.environment_shift,
                )
            )
        return sorted(out, key=lambda view: view.x)  # commit order: the points are, the run ids need not be
    found = detect_change_points([v if v is not None else float("nan") for v in values], DETECTOR)
    return [
        ChangePointView(
            x=offset + cp.index,
            before_x=offset + cp.before_index,
            run_id=points[cp.index].run_id,
            sha=points[cp.index].sha,
            baseline=cp.baseline,
            level_after=cp.level_after,
            lower=cp.lower_limit,
            upper=cp.upper_limit,
            effect=cp.effect,
            direction=direction_of(cp.effect, header.higher_is_better).value,
            source="computed on view",
        )
        for cp in found
    ]


# ---------------------------------------------------------------------------------------- PR verdicts


@dataclass
class PrVerdictRow:
    comparison: PrComparison
    case_id: int | None
    case_name: str
    params: dict
    gpu_model: str
    benchmark: str
    unit: str

    @property
    def params_label(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in sorted(self.params.items()))


PR_SORTS = {
    "effect": lambda r: -abs(r.comparison.effect or 0.0),
    "effect_asc": lambda r: r.comparison.effect if r.comparison.effect is not None else 0.0,
    "effect_desc": lambda r: -(r.comparison.effect if r.comparison.effect is not None else 0.0),
    "verdict": lambda r: (
        {"regression": 0, "improvement": 1, "inconclusive": 2, "unchanged": 3}.get(r.comparison.verdict, 4),
        -abs(r.comparison.effect or 0.0),
    ),
    "case": lambda r: (r.case_name, r.params_label, r.gpu_model),
    "q": lambda r: r.comparison.q_value if r.comparison.q_value is not None else 2.0,
}


def pr_verdicts(session: Session, number: int, sort: str = "verdict") -> list[PrVerdictRow]:
    """The newest comparison of each series in the pull request (a re-run supersedes older ones)."""
    newest = (
        select(func.max(PrComparison.id))
        .where(PrComparison.pr_number == number)
        .group_by(PrComparison.series_key)
    )
    rows = session.execute(
        select(
            PrComparison, Case.id, Case.case_name, Case.params, Case.gpu_model, Benchmark.name, Benchmark.unit
        )
        .outerjoin(Series, Series.id == PrComparison.series_id)
        .outerjoin(Case, Case.id == Series.case_id)
        .outerjoin(Benchmark, Benchmark.id == Series.benchmark_id)
        .where(PrComparison.id.in_(newest))
    ).all()
    out = [
        PrVerdictRow(
            c,
            case_id,
            case_name or c.series_key,
            params or {},
            gpu or "",
            bench or c.series_key,
            unit or "seconds",
        )
        for c, case_id, case_name, params, gpu, bench, unit in rows
    ]
    out.sort(key=PR_SORTS.get(sort, PR_SORTS["verdict"]))
    return out


# --------------------------------------------------------------------------------------------- alerts


@dataclass
class AlertRow:
    alert: Alert
    case_name: str | None
    params: dict
    changes: list[AlertStatusChange]


def alerts(session: Session, live: bool, limit: int = 200, kind: str = "") -> list[AlertRow]:
    """The live alerts (or the closed ones), in the API's order (store.alert_queries), with their case."""
    found = list_alerts(
        session, kind=kind or None, limit=limit, statuses=LIVE_STATES if live else CLOSED_STATES
    )
    ids = [a.id for a in found]
    names: dict[int, tuple[str | None, dict]] = {}
    changes: dict[int, list[AlertStatusChange]] = {i: [] for i in ids}
    if ids:
        for alert_id, name, params in session.execute(
            select(Alert.id, Case.case_name, Case.params)
            .outerjoin(Series, Series.id == Alert.series_id)
            .outerjoin(Case, Case.id == func.coalesce(Alert.case_id, Series.case_id))
            .where(Alert.id.in_(ids))
        ):
            names[alert_id] = (name, params or {})
        for change in session.scalars(
            select(AlertStatusChange)
            .where(AlertStatusChange.alert_id.in_(ids))
            .order_by(AlertStatusChange.id)
        ):
            changes[change.alert_id].append(change)
    return [AlertRow(a, *names.get(a.id, (None, {})), changes[a.id]) for a in found]


def alert_counts(session: Session) -> dict[str, int]:
    return {
        status.value if hasattr(status, "value") else str(status): n
        for status, n in session.execute(select(Alert.status, func.count()).group_by(Alert.status))
    }

"""A regression shared by most series of an environment (one machine, GPU model and asv environment) is
one alert about the environment: its series' change points are stored as usual, but they open no alerts
of their own (tewatch.detect.shared_shifts finds the shared commit). The alert resolves once most of its
series are back at their earlier level (tewatch.detect.returns), naming the commit where most returned,
and once later history no longer shows the shift there."""

from __future__ import annotations

import hashlib
import statistics
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from sqlalchemy import select
from sqlalchemy.orm import Session

from tewatch.alerts.events import EventType, emit
from tewatch.alerts.lifecycle import change_status, open_alert
from tewatch.detect.changepoint import ChangePoint
from tewatch.detect.direction import Direction, direction_of
from tewatch.detect.shared_shifts import ShiftMember, majority_return, shared_shifts, shift_gone
from tewatch.ingest.plan import UNKNOWN_GPU
from tewatch.pipeline.history import History, Point
from tewatch.pipeline.summary import DetectSummary
from tewatch.pipeline.withdrawal import STILL_OPEN, reopen_unreturned, resolve_returned
from tewatch.store.schema.alert_models import Alert, AlertKind, AlertStatus
from tewatch.store.schema.models import Machine

Group = tuple[str, str, int]  # GPU model, asv environment, machine id


@dataclass(frozen=True)
class SeriesChange:
    """One series' change points, and which of its regressions the series has since undone ({k: j})."""

    history: History
    change_points: list[ChangePoint]
    returned: dict[int, int] = field(default_factory=dict)


@dataclass(frozen=True)
class EnvironmentShift:
    group: Group
    commit_id: int
    sha: str
    run_id: int  # a run of the environment at the commit
    members: list[tuple[SeriesChange, int]]  # (series, position of its change point)
    measured: int  # series of the environment measured at the commit

    @property
    def effect(self) -> float:
        return statistics.median(change.change_points[k].effect for change, k in self.members)

    def returned_at(self) -> str | None:
        """The commit where most of its series came back to their earlier level; None while fewer than
        half of them have."""
        back = [
            _point(change, change.change_points[change.returned[k]].index).sha
            for change, k in self.members
            if k in change.returned
        ]
        return majority_return(back, len(self.members))


def _point(change: SeriesChange, index: int) -> Point:
    return change.history.points[index]


def group_prefix(branch: str, group: Group) -> str:
    """The start of the dedupe keys of an environment's shift alerts on a branch."""
    gpu_model, environment, machine_id = group
    digest = hashlib.sha1(f"{gpu_model}\n{environment}".encode()).hexdigest()[:12]
    return f"environment:{branch}:{machine_id}:{digest}:"


def environment_shifts(changes: Sequence[SeriesChange]) -> tuple[list[EnvironmentShift], dict[Group, int]]:
    """The regressions shared by most series of an environment, found among these series' change points
    (derived ratio series belong to no environment), and how many of these series each environment has."""
    measured: dict[Group, Counter[int]] = defaultdict(Counter)
    series: dict[Group, set[str]] = defaultdict(set)
    candidates: dict[Group, list[tuple[SeriesChange, int]]] = defaultdict(list)
    for change in changes:
        info = change.history.info
        if info.series_id is None:
            continue
        for point in change.history.points:
            measured[(info.gpu_model, info.environment, point.machine_id)][point.commit_id] += 1
            series[(info.gpu_model, info.environment, point.machine_id)].add(info.key)
        for k, cp in enumerate(change.change_points):
            if direction_of(cp.effect, info.higher_is_better) is Direction.regression:
                group = (info.gpu_model, info.environment, _point(change, cp.index).machine_id)
                candidates[group].append((change, k))
    found = []
    for group, members in candidates.items():
        shift_members = []
        for change, k in members:
            cp, points = change.change_points[k], change.history.points
            commits = frozenset(
                p.commit_id for p in points[cp.first_possible_index : cp.last_possible_index + 1]
            )
            shift_members.append(ShiftMember(change.history.info.key, points[cp.index].commit_id, commits))
        for shift in shared_shifts(shift_members, measured[group]):
            taken = [members[i] for i in shift.members]
            at = next(p for change, _ in taken for p in change.history.points if p.commit_id == shift.commit)
            found.append(EnvironmentShift(group, at.commit_id, at.sha, at.run_id, taken, shift.measured))
    return found, {group: len(keys) for group, keys in series.items()}


def _where(session: Session, group: Group) -> str:
    gpu_model, environment, machine_id = group
    machine = session.get(Machine, machine_id)
    parts = [
        machine.name if machine else "",
        gpu_model if gpu_model and gpu_model != UNKNOWN_GPU else "",
        environment,
    ]
    return " ".join(part for part in parts if part) or "one environment"


def store_environment_alerts(
    session: Session,
    shifts: list[EnvironmentShift],
    groups: dict[Group, int],
    branch: str,
    summary: DetectSummary,
) -> dict[tuple[str, int], Alert]:
    """Open (or resolve) one alert per shared shift; resolve those of these environments that the history
    no longer shows, where this pass saw at least as many of the environment's series as the alert counted
    measured (a pass over some of them cannot tell). Returns {(series key, change point index): its
    environment's alert}."""
    folded: dict[tuple[str, int], Alert] = {}
    current = set()
    for shift in shifts:
        key = f"{group_prefix(branch, shift.group)}{shift.commit_id}"
        current.add(key)
        where = _where(session, shift.group)
        alert, created = open_alert(
            session,
            key,
            AlertKind.regression,
            f"[whole environment] {where}: {len(shift.members)} of {shift.measured} series "
            f"{shift.effect * 100:+.1f} % (median) since {shift.sha[:10]}",
            run_id=shift.run_id,
            branch=branch,
            gpu_model=shift.group[0],
            effect=shift.effect,
            details={
                "scope": "environment",
                "environment": where,
                "commit": shift.sha,
                "series": len(shift.members),
                "measured": shift.measured,
                "series_ids": sorted(c.history.info.series_id or 0 for c, _ in shift.members),
            },
        )
        if created:
            summary.environment_alerts += 1
            emit(
                session,
                EventType.regression_detected,
                {
                    "alert_id": alert.id,
                    "scope": "environment",
                    "branch": branch,
                    "environment": where,
                    "gpu_model": shift.group[0],
                    "commit": shift.sha,
                    "effect": shift.effect,
                    "series": len(shift.members),
                    "measured": shift.measured,
                },
            )
            summary.events += 1
        returned = shift.returned_at()
        if returned is not None:
            resolve_returned(session, alert, returned, summary, "most of its series are")
        else:
            reopen_unreturned(session, alert)
        for change, k in shift.members:
            folded[(change.history.info.key, change.change_points[k].index)] = alert
    for group, seen in groups.items():
        prefix = group_prefix(branch, group)
        stale = session.scalars(
            select(Alert).where(
                Alert.dedupe_key.startswith(prefix, autoescape=True), Alert.status.in_(STILL_OPEN)
            )
        )
        for alert in stale:
            if shift_gone(alert.dedupe_key in current, seen, (alert.details or {}).get("measured", 0)):
                change_status(
                    session, alert, AlertStatus.resolved, "detector", "the history no longer shows the shift"
                )
                summary.resolved_alerts += 1
    return folded

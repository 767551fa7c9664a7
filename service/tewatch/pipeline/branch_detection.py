"""Change points on a branch: every series' history read and its change points computed outside any
write transaction, then stored (detections, regression alerts, events, withdrawals) a batch of series at a
time."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable

from sqlalchemy import Engine, func, select
from sqlalchemy.orm import Session

from tewatch.alerts.events import EventType, emit
from tewatch.alerts.lifecycle import change_status, open_alert
from tewatch.detect.change_point_alerts import (
    AlertStep,
    alert_step,
    is_same_change,
    is_withdrawn,
    opens_alert,
)
from tewatch.detect.changepoint import ChangePoint, detect_change_points
from tewatch.detect.config import ChangePointConfig
from tewatch.detect.direction import Direction, direction_of
from tewatch.detect.environment import environment_shift
from tewatch.detect.returns import returns
from tewatch.detect.version import DETECTOR_VERSION
from tewatch.pipeline.environment_alerts import SeriesChange, environment_shifts, store_environment_alerts
from tewatch.pipeline.history import History, SeriesInfo, branch_histories
from tewatch.pipeline.labels import machine_of, measured_on
from tewatch.pipeline.memory_numerics import change_point_alert_kind
from tewatch.pipeline.summary import WRITE_BATCH, DetectSummary
from tewatch.pipeline.withdrawal import STILL_OPEN, reopen_unreturned, resolve_returned, withdraw
from tewatch.store.engine.database import write_session
from tewatch.store.schema.alert_models import CHANGE_POINT_KINDS, Alert, AlertStatus, Detection
from tewatch.store.schema.models import Run

STALE_ATTEMPTS = 3
# what the regression.detected event repeats of the stored change point
_EVENT_FIELDS = (
    "baseline",
    "level_after",
    "effect",
    "lower_limit",
    "upper_limit",
    "z",
    "environment_shift",
    "environment_changes",
    "detector_version",
)


def _links(public_url: str, info: SeriesInfo) -> dict[str, str]:
    base = public_url.rstrip("/")
    links = {"alerts": f"{base}/alerts"}
    if info.series_id is not None:
        links["series"] = f"{base}/series/{info.series_id}"
    return links


def _record_change_point(
    session: Session,
    history: History,
    cp: ChangePoint,
    branch: str,
    config: ChangePointConfig,
    public_url: str,
    summary: DetectSummary,
    existing: list[Detection],
    folded_into: int | None,
) -> Detection:
    """Store a change point (updating the stored one it moved from) and, for a new regression that is not
    part of an environment's shift (`folded_into`: that shift's alert), open its alert."""
    info, points = history.info, history.points
    direction = direction_of(cp.effect, info.higher_is_better)
    shift = environment_shift(
        [p.environment for p in points], cp.first_possible_index, cp.last_possible_index
    )
    position = {p.commit_id: i for i, p in enumerate(points)}
    fields = {
        "series_id": info.series_id,
        "series_key": info.key,
        "branch": branch,
        "gpu_model": info.gpu_model,
        "run_id": points[cp.index].run_id,
        "commit_id": points[cp.index].commit_id,
        "before_commit_id": points[cp.before_index].commit_id,
        "first_possible_commit_id": points[cp.first_possible_index].commit_id,
        "direction": direction.value,
        "baseline": cp.baseline,
        "level_after": cp.level_after,
        "lower_limit": cp.lower_limit,
        "upper_limit": cp.upper_limit,
        "effect": cp.effect,
        "z": cp.z,
        "sigma": cp.sigma,
        "n_before": cp.n_before,
        "n_after": cp.n_after,
        "environment_shift": shift is not None,
        "environment_changes": shift[1] if shift else {},
        "detector_version": DETECTOR_VERSION,
        "config": config.as_dict(),
        "active": True,
    }
    slack = config.persistence
    for stored in existing:
        if is_same_change(stored.direction, position.get(stored.commit_id), direction, cp, slack):
            for name, value in fields.items():
                setattr(stored, name, value)
            existing.remove(stored)
            return stored
    detection = Detection(**fields)
    session.add(detection)
    session.flush()
    summary.change_points += 1
    summary.environment_shifts += shift is not None
    if direction is Direction.improvement:
        summary.new_improvements += 1
    else:
        summary.new_regressions += 1
    if not opens_alert(direction, folded_into is not None):
        return detection
    sha_range = commit_range(history, cp)
    alert, created = open_alert(
        session,
        f"regression:{info.key}:{branch}:{detection.id}",
        change_point_alert_kind(info),
        regression_title(session, history, cp, shift is not None),
        series_id=info.series_id,
        case_id=info.case_id,
        detection_id=detection.id,
        run_id=points[cp.index].run_id,
        branch=branch,
        gpu_model=info.gpu_model,
        effect=cp.effect,
        details={"environment_changes": fields["environment_changes"], "commit_range": sha_range},
    )
    if created:
        payload = {
            "alert_id": alert.id,
            "detection_id": detection.id,
            "branch": branch,
            "series": info.label,
            "series_key": info.key,
            "series_id": info.series_id,
            "gpu_model": info.gpu_model,
            "unit": info.unit,
            "higher_is_better": info.higher_is_better,
            "commit": points[cp.index].sha,
            "last_commit_before": points[cp.before_index].sha,
            "first_possible_commit": points[cp.first_possible_index].sha,
            **{name: fields[name] for name in _EVENT_FIELDS},
            "links": _links(public_url, info),
        }
        emit(session, EventType.regression_detected, payload)
        summary.events += 1
    return detection


def commit_range(history: History, cp: ChangePoint) -> str:
    points = history.points
    return f"{points[cp.first_possible_index].sha[:10]}..{points[cp.last_possible_index].sha[:10]}"


def regression_title(session: Session, history: History, cp: ChangePoint, environment_shift: bool) -> str:
    info, point = history.info, history.points[cp.index]
    prefix = "[environment] " if environment_shift else ""
    where = measured_on(info.gpu_model, machine_of(session, point.run_id))
    return f"{prefix}{info.label}{where}: {cp.effect * 100:+.1f} % since {commit_range(history, cp)}"


def let_go_or_follow(
    session: Session,
    change: SeriesChange,
    detections: list[Detection],
    folded: dict[tuple[str, int], int],
    summary: DetectSummary,
) -> None:
    """The regression alerts of one series' change points: resolved where the series has come back (or
    the regression is part of an environment's shift, which has its own alert), opened again where that
    return is no longer shown, and otherwise kept on the change point as history refines it (its commit
    range and effect)."""
    by_detection = {
        alert.detection_id: alert
        for alert in session.scalars(
            select(Alert).where(
                Alert.detection_id.in_([d.id for d in detections]), Alert.kind.in_(CHANGE_POINT_KINDS)
            )
        )
    }
    for k, (cp, detection) in enumerate(zip(change.change_points, detections, strict=True)):
        alert = by_detection.get(detection.id)
        if alert is None:
            continue
        environment_alert = folded.get((change.history.info.key, cp.index))
        step = alert_step(environment_alert is not None, alert.status in STILL_OPEN, k in change.returned)
        if step is AlertStep.part_of_shift:
            change_status(
                session,
                alert,
                AlertStatus.resolved,
                "detector",
                f"part of a shift of its whole environment: alert {environment_alert}",
            )
            summary.resolved_alerts += 1
        elif step is AlertStep.returned:
            sha = change.history.points[change.change_points[change.returned[k]].index].sha
            resolve_returned(session, alert, sha, summary)
        else:
            reopen_unreturned(session, alert)
            sha_range = commit_range(change.history, cp)
            if alert.status in STILL_OPEN and (alert.details or {}).get("commit_range") != sha_range:
                alert.title = regression_title(session, change.history, cp, detection.environment_shift)[:500]
                alert.effect = cp.effect
                alert.details = {**(alert.details or {}), "commit_range": sha_range}


class _Stale(Exception):
    """A run landed on the branch after its histories were read."""


def _branch_state(session: Session, branch: str) -> tuple[int, int | None]:
    """Changes whenever a run lands on the branch (runs are never deleted)."""
    count, newest = session.execute(
        select(func.count(Run.id), func.max(Run.id)).where(Run.branch == branch, Run.pr_number.is_(None))
    ).one()
    return count, newest


def _stored_detections(session: Session, branch: str, keys: list[str]) -> dict[str, list[Detection]]:
    stored: dict[str, list[Detection]] = defaultdict(list)
    for start in range(0, len(keys), 500):
        query = select(Detection).where(
            Detection.branch == branch,
            Detection.active.is_(True),
            Detection.series_key.in_(keys[start : start + 500]),
        )
        for detection in session.scalars(query):
            stored[detection.series_key].append(detection)
    return stored


def _store_change_points(
    engine: Engine,
    found: list[SeriesChange],
    branch: str,
    config: ChangePointConfig,
    public_url: str,
    summary: DetectSummary,
    state: tuple[int, int | None] | None,
) -> None:
    """Store what the histories showed: first the shifts shared by most series of an environment (one
    alert each), then the series, WRITE_BATCH per transaction. With `state`, raises _Stale before a
    transaction once the branch has moved on from it (what is already stored stays: storing is
    idempotent, the next pass updates it)."""
    shifts, groups = environment_shifts(found)
    with write_session(engine) as session:
        if state is not None and _branch_state(session, branch) != state:
            raise _Stale
        folded = {
            key: alert.id
            for key, alert in store_environment_alerts(session, shifts, groups, branch, summary).items()
        }
    for start in range(0, len(found), WRITE_BATCH):
        batch = found[start : start + WRITE_BATCH]
        with write_session(engine) as session:
            if state is not None and _branch_state(session, branch) != state:
                raise _Stale
            stored = _stored_detections(session, branch, [f.history.info.key for f in batch])
            for item in batch:
                commits = {p.commit_id for p in item.history.points}
                key = item.history.info.key
                existing = stored.get(key, [])
                detections = [
                    _record_change_point(
                        session,
                        item.history,
                        cp,
                        branch,
                        config,
                        public_url,
                        summary,
                        existing,
                        folded.get((key, cp.index)),
                    )
                    for cp in item.change_points
                ]
                let_go_or_follow(session, item, detections, folded, summary)
                for gone in existing:
                    if is_withdrawn(gone.commit_id, commits):
                        withdraw(
                            session, gone, summary, item.history.points[-1].sha if item.history.points else ""
                        )
    summary.series += len(found)


def detect_on_branch(
    engine: Engine,
    branch: str,
    public_url: str,
    config: ChangePointConfig,
    summary: DetectSummary,
    series_ids: list[int] | None = None,
    progress_total: Callable[[int], None] | None = None,
    progress: Callable[[int], None] | None = None,
) -> None:
    for attempt in range(STALE_ATTEMPTS):
        with Session(engine) as session:
            state = _branch_state(session, branch)
            histories = branch_histories(session, branch, series_ids)
        if progress_total and attempt == 0:
            progress_total(len(histories))
        found = []
        for history in histories:
            change_points = detect_change_points(history.values, config)
            returned = returns(change_points, history.info.higher_is_better)
            found.append(SeriesChange(history, change_points, returned))
            if progress and attempt == 0:
                progress(1)
        last = attempt == STALE_ATTEMPTS - 1
        try:
            _store_change_points(engine, found, branch, config, public_url, summary, None if last else state)
            return
        except _Stale:
            continue


def detect_branch(
    engine: Engine,
    branch: str,
    public_url: str,
    config: ChangePointConfig | None = None,
    series_ids: list[int] | None = None,
    progress_total: Callable[[int], None] | None = None,
    progress: Callable[[int], None] | None = None,
) -> DetectSummary:
    """Change points in every series of a branch (or of `series_ids`). Histories are read and change
    points computed outside any write transaction; only storing them holds the write lock, a batch at a
    time. When a run lands on the branch meanwhile, the pass starts again from the newer history (the
    last of STALE_ATTEMPTS passes stores regardless)."""
    summary = DetectSummary()
    detect_on_branch(
        engine,
        branch,
        public_url,
        config or ChangePointConfig(),
        summary,
        series_ids,
        progress_total,
        progress,
    )
    return summary

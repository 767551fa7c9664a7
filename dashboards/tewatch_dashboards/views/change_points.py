"""Change points on a chart: the stored detections of the series (what alerts were raised from); a series
that detection has not looked at yet gets the same detector run on the points the page shows, marked as
computed on view."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Connection

from tewatch.detect.changepoint import detect_change_points
from tewatch.detect.config import ChangePointConfig
from tewatch.detect.direction import direction_of
from tewatch.store.reads.detection_reads import active_change_points
from tewatch.store.reads.series_reads import SeriesHeader, SeriesPoint

DETECTOR = ChangePointConfig()
MIN_EFFECT = DETECTOR.min_effect


@dataclass
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
    source: str  # "stored" (what detection recorded) | "computed on view" | "release step TE a → b"
    environment_shift: bool = False
    commit: str = ""  # the commit as people know it (TE's version; never a version's stand-in hash)


def change_points(
    conn: Connection,
    header: SeriesHeader,
    points: list[SeriesPoint],
    values: list[float | None],
    offset: int,
    branch: str = "",
) -> list[ChangePointView]:
    position = {p.run_id: i for i, p in enumerate(points)}
    stored = active_change_points(conn, header.series_id, branch)
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

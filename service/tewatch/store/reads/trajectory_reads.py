"""Training trajectories as the store keeps them: one per run and case, read whole (an upload holds at
most tewatch.ingest.records.MAX_TRAJECTORY_STEPS steps, so one is bounded)."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Connection, select

from tewatch.store.reads.table_rows import TrajectoryFacts, columns, row_of
from tewatch.store.schema.models import Trajectory

IN_CLAUSE = 500  # ids per IN (...) list


def run_trajectory(conn: Connection, run_id: int, case_id: int) -> TrajectoryFacts | None:
    found = conn.execute(
        select(*columns(TrajectoryFacts)).where(Trajectory.run_id == run_id, Trajectory.case_id == case_id)
    ).first()
    return row_of(TrajectoryFacts, found) if found else None


def trajectories_in_runs(conn: Connection, run_ids: Sequence[int]) -> list[TrajectoryFacts]:
    """Every trajectory of these runs, by run then case."""
    found: list[TrajectoryFacts] = []
    wanted = sorted(set(run_ids))
    for start in range(0, len(wanted), IN_CLAUSE):
        query = select(*columns(TrajectoryFacts)).where(
            Trajectory.run_id.in_(wanted[start : start + IN_CLAUSE])
        )
        found += [row_of(TrajectoryFacts, row) for row in conn.execute(query)]
    return sorted(found, key=lambda t: (t.run_id, t.case_id))


def case_trajectories(conn: Connection, case_id: int, run_ids: Sequence[int]) -> list[TrajectoryFacts]:
    """The case's trajectories in these runs, by run."""
    found: list[TrajectoryFacts] = []
    wanted = sorted(set(run_ids))
    for start in range(0, len(wanted), IN_CLAUSE):
        query = select(*columns(TrajectoryFacts)).where(
            Trajectory.case_id == case_id, Trajectory.run_id.in_(wanted[start : start + IN_CLAUSE])
        )
        found += [row_of(TrajectoryFacts, row) for row in conn.execute(query)]
    return sorted(found, key=lambda t: t.run_id)


def latest_trajectory_run(conn: Connection, case_id: int) -> int | None:
    """The newest run that trained the case."""
    query = select(Trajectory.run_id).where(Trajectory.case_id == case_id).order_by(Trajectory.run_id.desc())
    return conn.scalar(query.limit(1))

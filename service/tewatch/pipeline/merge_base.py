"""The runs a pull request's run is judged against: its merge base's."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from tewatch.store.schema.models import Commit, Machine, Run


def merge_base_runs(session: Session, run: Run) -> list[Run]:
    """The merge base's runs on the head run's machine where it has any, else on the same GPU model: another
    host moves host-bound cases by tens of percent (an H200 contract check, 26 us on one, 14 us on another)."""
    if not run.merge_base_sha:
        return []
    query = (
        select(Run)
        .join(Commit, Run.commit_id == Commit.id)
        .join(Machine, Run.machine_id == Machine.id)
        .where(
            Commit.sha.startswith(run.merge_base_sha[:40]),
            Run.pr_number.is_(None),
            Machine.gpu_model == run.machine.gpu_model,
        )
    )
    runs = list(session.scalars(query))
    same_machine = [r for r in runs if r.machine_id == run.machine_id]
    return same_machine or runs

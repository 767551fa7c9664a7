"""Keep the latest-verdict tables current, in the transaction that stores the run's verdicts.

"Latest" is the newest commit: a row moves to a run only when that run comes later in commit order
(tewatch.store.reads.commit_order) than the run it points at. So a backfill of old commits leaves the newest
commit's verdicts in place, and so do concurrent uploads that commit out of order. Rows are written in
case order, so that concurrent PostgreSQL transactions lock them in the same order.
"""

from __future__ import annotations

from sqlalchemy import Connection, delete, func, insert, literal, select, tuple_
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from tewatch.store.reads.commit_order import commit_order_columns
from tewatch.store.schema.models import Commit, LatestBranchVerdict, LatestVerdict, Run, Verdict


def update_latest_verdicts(conn: Connection, run_id: int, branch: str | None) -> None:
    _upsert(conn, LatestVerdict, run_id, None)
    if branch is not None:
        _upsert(conn, LatestBranchVerdict, run_id, branch)


def _upsert(conn: Connection, model: type[LatestVerdict] | type[LatestBranchVerdict], run_id: int, branch):
    insert = pg_insert if conn.dialect.name == "postgresql" else sqlite_insert
    columns = ["case_id", "run_id", "verdict_id", "committed_at", "started_at"]
    selected = [Verdict.case_id, Verdict.run_id, Verdict.id, *commit_order_columns()]
    keys = ["case_id"]
    if branch is not None:
        columns, selected, keys = ["branch", *columns], [literal(branch), *selected], ["branch", "case_id"]
    rows = (
        select(*selected)
        .join(Run, Run.id == Verdict.run_id)
        .join(Commit, Commit.id == Run.commit_id)
        .where(Verdict.run_id == run_id)
        .order_by(Verdict.case_id)
    )
    statement = insert(model).from_select(columns, rows)
    new = statement.excluded
    statement = statement.on_conflict_do_update(
        index_elements=keys,
        set_={
            "run_id": new.run_id,
            "verdict_id": new.verdict_id,
            "committed_at": new.committed_at,
            "started_at": new.started_at,
        },
        where=tuple_(new.committed_at, new.started_at, new.run_id)
        > tuple_(model.committed_at, model.started_at, model.run_id),
    )
    conn.execute(statement)


def rebuild_latest_verdicts(conn: Connection) -> None:
    """Both tables from the verdicts, after commit order itself changed (a git graph arrived)."""
    committed, started = commit_order_columns()
    for model, partition in ((LatestVerdict, ()), (LatestBranchVerdict, (Run.branch,))):
        place = func.row_number().over(
            partition_by=(*partition, Verdict.case_id),
            order_by=(committed.desc(), started.desc(), Verdict.run_id.desc()),
        )
        ranked = (
            select(
                *partition,
                Verdict.case_id,
                Verdict.run_id,
                Verdict.id.label("verdict_id"),
                committed.label("committed_at"),
                started.label("started_at"),
                place.label("place"),
            )
            .join(Run, Run.id == Verdict.run_id)
            .join(Commit, Commit.id == Run.commit_id)
            .where(*(column.is_not(None) for column in partition))
            .subquery()
        )
        columns = [
            *(["branch"] if partition else []),
            "case_id",
            "run_id",
            "verdict_id",
            "committed_at",
            "started_at",
        ]
        conn.execute(delete(model))
        conn.execute(
            insert(model).from_select(
                columns, select(*(ranked.c[name] for name in columns)).where(ranked.c.place == 1)
            )
        )

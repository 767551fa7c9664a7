"""Keep the latest-verdict tables current, in the transaction that stores the run's verdicts.

A row moves to a run only when that run's id is higher than the run it points at, so concurrent uploads
that commit out of order still leave the newest run in place. Rows are written in case order, so that
concurrent PostgreSQL transactions lock them in the same order.
"""

from __future__ import annotations

from sqlalchemy import Connection, literal, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from tewatch.store.models import LatestBranchVerdict, LatestVerdict, Verdict


def update_latest_verdicts(conn: Connection, run_id: int, branch: str | None) -> None:
    _upsert(conn, LatestVerdict, run_id, None)
    if branch is not None:
        _upsert(conn, LatestBranchVerdict, run_id, branch)


def _upsert(conn: Connection, model: type[LatestVerdict] | type[LatestBranchVerdict], run_id: int, branch):
    insert = pg_insert if conn.dialect.name == "postgresql" else sqlite_insert
    columns = ["case_id", "run_id", "verdict_id"]
    selected = [Verdict.case_id, Verdict.run_id, Verdict.id]
    keys = ["case_id"]
    if branch is not None:
        columns, selected, keys = ["branch", *columns], [literal(branch), *selected], ["branch", "case_id"]
    rows = select(*selected).where(Verdict.run_id == run_id).order_by(Verdict.case_id)
    statement = insert(model).from_select(columns, rows)
    statement = statement.on_conflict_do_update(
        index_elements=keys,
        set_={"run_id": statement.excluded.run_id, "verdict_id": statement.excluded.verdict_id},
        where=statement.excluded.run_id > model.run_id,
    )
    conn.execute(statement)

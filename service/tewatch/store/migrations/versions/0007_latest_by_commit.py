"""latest verdicts by commit order: each row keeps its run's commit date and start, and the tables are
rebuilt so that every case points at its newest commit's verdict (they pointed at the highest run id)

Revision ID: 0007_latest_by_commit
Revises: 0006_subscription_kind
Create Date: 2026-12-01 15:00:00.000000
"""

from collections.abc import Sequence
from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import op

revision: str = "0007_latest_by_commit"
down_revision: str | None = "0006_subscription_kind"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

NO_DATE = datetime(1970, 1, 1, tzinfo=UTC)
RANKED = """
SELECT {branch} v.case_id AS case_id, v.run_id AS run_id, v.id AS verdict_id,
       COALESCE(c.committed_at, :no_date) AS committed_at, COALESCE(r.started_at, r.uploaded_at) AS started_at,
       ROW_NUMBER() OVER (
         PARTITION BY {partition} v.case_id
         ORDER BY COALESCE(c.committed_at, :no_date) DESC, COALESCE(r.started_at, r.uploaded_at) DESC,
                  v.run_id DESC
       ) AS place
FROM verdicts v JOIN runs r ON r.id = v.run_id JOIN commits c ON c.id = r.commit_id
{where}
"""
REBUILD = {
    "latest_verdicts": (
        "case_id, run_id, verdict_id, committed_at, started_at",
        RANKED.format(branch="", partition="", where=""),
    ),
    "latest_branch_verdicts": (
        "branch, case_id, run_id, verdict_id, committed_at, started_at",
        RANKED.format(
            branch="r.branch AS branch,", partition="r.branch,", where="WHERE r.branch IS NOT NULL"
        ),
    ),
}
BY_RUN_ID = {
    "latest_verdicts": """
INSERT INTO latest_verdicts (case_id, run_id, verdict_id)
SELECT v.case_id, v.run_id, v.id FROM verdicts v
JOIN (SELECT case_id, MAX(run_id) AS run_id FROM verdicts GROUP BY case_id) newest
  ON newest.case_id = v.case_id AND newest.run_id = v.run_id
""",
    "latest_branch_verdicts": """
INSERT INTO latest_branch_verdicts (branch, case_id, run_id, verdict_id)
SELECT r.branch, v.case_id, v.run_id, v.id FROM verdicts v JOIN runs r ON r.id = v.run_id
JOIN (
  SELECT r2.branch AS branch, v2.case_id AS case_id, MAX(v2.run_id) AS run_id
  FROM verdicts v2 JOIN runs r2 ON r2.id = v2.run_id WHERE r2.branch IS NOT NULL
  GROUP BY r2.branch, v2.case_id
) newest ON newest.case_id = v.case_id AND newest.run_id = v.run_id AND newest.branch = r.branch
""",
}


def upgrade() -> None:
    for table, (columns, ranked) in REBUILD.items():
        op.add_column(table, sa.Column("committed_at", sa.DateTime(timezone=True), nullable=True))
        op.add_column(table, sa.Column("started_at", sa.DateTime(timezone=True), nullable=True))
        op.execute(f"DELETE FROM {table}")
        statement = sa.text(
            f"INSERT INTO {table} ({columns}) SELECT {columns} FROM ({ranked}) ranked WHERE place = 1"
        )
        op.get_bind().execute(
            statement.bindparams(sa.bindparam("no_date", NO_DATE, type_=sa.DateTime(timezone=True)))
        )


def downgrade() -> None:
    for table in REBUILD:
        op.execute(f"DELETE FROM {table}")
        op.drop_column(table, "started_at")
        op.drop_column(table, "committed_at")
        op.execute(BY_RUN_ID[table])

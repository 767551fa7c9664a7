"""commit order from the git graph: the graph a runner sends (commit_graph) and each commit's place in it

Revision ID: 0009_commit_graph
Revises: 0008_case_environment
Create Date: 2026-12-01 16:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009_commit_graph"
down_revision: str | None = "0008_case_environment"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("commits", sa.Column("ordered_at", sa.DateTime(timezone=True), nullable=True))
    op.create_table(
        "commit_graph",
        sa.Column("repo", sa.String(length=200), nullable=False),
        sa.Column("sha", sa.String(length=64), nullable=False),
        sa.Column("parents", sa.JSON(), nullable=False),
        sa.Column("ordered_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("repo", "sha"),
    )


def downgrade() -> None:
    op.drop_table("commit_graph")
    op.drop_column("commits", "ordered_at")

"""A/B rounds: which A/B session and side a run belongs to, the samples of each round of a result, and
what a pull-request comparison read from them

Plain ALTER TABLE ADD/DROP COLUMN (SQLite 3.35+), not batch mode: batch mode rebuilds a table, and on
SQLite dropping the old `runs` or `pr_comparisons` runs the ON DELETE actions of the tables that refer to
them (run files, alerts).

Revision ID: 0005_ab_rounds
Revises: 0004_pr_comparison_noise_source
Create Date: 2026-12-01 12:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005_ab_rounds"
down_revision: str | None = "0004_pr_comparison_noise_source"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("runs", sa.Column("ab_session", sa.String(length=64), nullable=True))
    op.add_column("runs", sa.Column("ab_side", sa.String(length=8), nullable=True))
    op.create_index("ix_runs_ab_session", "runs", ["ab_session"])
    op.add_column("results", sa.Column("round_sizes", sa.JSON(), nullable=True))
    op.add_column("pr_comparisons", sa.Column("rounds", sa.Integer(), nullable=True))
    op.add_column("pr_comparisons", sa.Column("modes", sa.JSON(), nullable=True))
    op.add_column("pr_comparisons", sa.Column("primary", sa.Boolean(), nullable=True))


def downgrade() -> None:
    op.drop_column("pr_comparisons", "primary")
    op.drop_column("pr_comparisons", "modes")
    op.drop_column("pr_comparisons", "rounds")
    op.drop_column("results", "round_sizes")
    op.drop_index("ix_runs_ab_session", table_name="runs")
    op.drop_column("runs", "ab_side")
    op.drop_column("runs", "ab_session")

"""A/B rounds: which A/B session and side a run belongs to, the samples of each round of a result, and
what a pull-request comparison read from them

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
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("ab_session", sa.String(length=64), nullable=True))
        batch_op.add_column(sa.Column("ab_side", sa.String(length=8), nullable=True))
        batch_op.create_index("ix_runs_ab_session", ["ab_session"])
    with op.batch_alter_table("results", schema=None) as batch_op:
        batch_op.add_column(sa.Column("round_sizes", sa.JSON(), nullable=True))
    with op.batch_alter_table("pr_comparisons", schema=None) as batch_op:
        batch_op.add_column(sa.Column("rounds", sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column("modes", sa.JSON(), nullable=True))
        batch_op.add_column(sa.Column("primary", sa.Boolean(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("pr_comparisons", schema=None) as batch_op:
        batch_op.drop_column("primary")
        batch_op.drop_column("modes")
        batch_op.drop_column("rounds")
    with op.batch_alter_table("results", schema=None) as batch_op:
        batch_op.drop_column("round_sizes")
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.drop_index("ix_runs_ab_session")
        batch_op.drop_column("ab_side")
        batch_op.drop_column("ab_session")

"""trajectories: a training case's loss and gradient norm per optimizer step, one row per run and case

Revision ID: 0018_trajectories
Revises: 0017_case_kernels
Create Date: 2026-12-03 14:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0018_trajectories"
down_revision: str | None = "0017_case_kernels"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "trajectories",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("case_id", sa.Integer(), nullable=False),
        sa.Column("steps", sa.Integer(), nullable=False),
        sa.Column("seed", sa.BigInteger(), nullable=True),
        sa.Column("micro_batches", sa.Integer(), nullable=True),
        sa.Column("tokens_per_step", sa.Integer(), nullable=True),
        sa.Column("resumed_from_step", sa.Integer(), nullable=True),
        sa.Column("loss", sa.JSON(), nullable=False),
        sa.Column("grad_norm", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("case_id", "run_id"),
    )
    op.create_index("ix_trajectories_run_id", "trajectories", ["run_id"])


def downgrade() -> None:
    op.drop_index("ix_trajectories_run_id", table_name="trajectories")
    op.drop_table("trajectories")

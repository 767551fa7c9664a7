"""each TE release's series judged against the release before it on the same branch and machine

Revision ID: 0011_release_comparisons
Revises: 0010_covering_history_indexes
Create Date: 2026-12-03 09:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011_release_comparisons"
down_revision: str | None = "0010_covering_history_indexes"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "release_comparisons",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("branch", sa.String(length=200), nullable=False),
        sa.Column("machine_id", sa.Integer(), nullable=False),
        sa.Column("base_version", sa.String(length=64), nullable=False),
        sa.Column("head_version", sa.String(length=64), nullable=False),
        sa.Column("head_run_id", sa.Integer(), nullable=False),
        sa.Column("base_run_ids", sa.JSON(), nullable=False),
        sa.Column("series_id", sa.Integer(), nullable=False),
        sa.Column("verdict", sa.String(length=16), nullable=False),
        sa.Column("baseline", sa.Float(), nullable=True),
        sa.Column("head", sa.Float(), nullable=True),
        sa.Column("effect", sa.Float(), nullable=True),
        sa.Column("ci_low", sa.Float(), nullable=True),
        sa.Column("ci_high", sa.Float(), nullable=True),
        sa.Column("q_value", sa.Float(), nullable=True),
        sa.Column("n_base", sa.Integer(), nullable=False),
        sa.Column("n_head", sa.Integer(), nullable=False),
        sa.Column("min_effect", sa.Float(), nullable=False),
        sa.Column("detector_version", sa.String(length=120), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["head_run_id"], ["runs.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["machine_id"], ["machines.id"]),
        sa.ForeignKeyConstraint(["series_id"], ["series.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("head_run_id", "series_id"),
    )
    with op.batch_alter_table("release_comparisons", schema=None) as batch_op:
        batch_op.create_index("ix_release_comparisons_step", ["branch", "machine_id", "head_version"])
        batch_op.create_index(batch_op.f("ix_release_comparisons_head_run_id"), ["head_run_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_release_comparisons_series_id"), ["series_id"], unique=False)


def downgrade() -> None:
    op.drop_table("release_comparisons")

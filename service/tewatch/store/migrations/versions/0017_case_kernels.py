"""case_kernels: a case's kernel table per run (the `kernels` block of its record, docs/kernels.md)

Revision ID: 0017_case_kernels
Revises: 0016_bisections
Create Date: 2026-12-03 14:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0017_case_kernels"
down_revision: str | None = "0016_bisections"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "case_kernels",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("case_id", sa.Integer(), nullable=False),
        sa.Column("device", sa.String(length=16), nullable=False),
        sa.Column("profiled_calls", sa.Integer(), nullable=False),
        sa.Column("launches_per_call", sa.Float(), nullable=True),
        sa.Column("syncs_per_call", sa.Float(), nullable=True),
        sa.Column("copies_per_call", sa.Float(), nullable=True),
        sa.Column("kernels", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("run_id", "case_id"),
    )
    op.create_index("ix_case_kernels_case", "case_kernels", ["case_id", "run_id"])


def downgrade() -> None:
    op.drop_index("ix_case_kernels_case", table_name="case_kernels")
    op.drop_table("case_kernels")

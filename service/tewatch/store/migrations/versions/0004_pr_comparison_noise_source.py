"""where a pull-request comparison's run-to-run noise came from

Revision ID: 0004_pr_comparison_noise_source
Revises: 0003_latest_verdicts_archives
Create Date: 2026-11-30 03:10:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004_pr_comparison_noise_source"
down_revision: str | None = "0003_latest_verdicts_archives"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("pr_comparisons", schema=None) as batch_op:
        batch_op.add_column(sa.Column("noise_source", sa.String(length=16), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("pr_comparisons", schema=None) as batch_op:
        batch_op.drop_column("noise_source")

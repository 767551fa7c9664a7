"""the asv environment a case was measured in, part of its identity (empty for `existing` environments)

Cases stored before keep an empty environment and their fingerprints: TE's runners measure in asv's
`existing` environment, whose cases stay what they were. Runs of other environments stored before stay
in those cases; their uploads from now on get cases of their own environment (uploading such a history
into a new store splits all of it).

Revision ID: 0008_case_environment
Revises: 0007_latest_by_commit
Create Date: 2026-12-01 15:30:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008_case_environment"
down_revision: str | None = "0007_latest_by_commit"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("cases", sa.Column("environment", sa.String(length=300), nullable=False, server_default=""))


def downgrade() -> None:
    op.drop_column("cases", "environment")

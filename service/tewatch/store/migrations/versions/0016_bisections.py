"""bisections and their steps (`tewatch bisect`, POST /api/v1/bisections)

Revision ID: 0016_bisections
Revises: 0015_graph_missing_parents
Create Date: 2026-12-03 10:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0016_bisections"
down_revision: str | None = "0015_graph_missing_parents"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "bisections",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("repo", sa.String(length=200), nullable=False),
        sa.Column("good_sha", sa.String(length=64), nullable=False),
        sa.Column("bad_sha", sa.String(length=64), nullable=False),
        sa.Column("judge", sa.String(length=32), nullable=False),
        sa.Column("selection", sa.String(length=500), nullable=False),
        sa.Column("status", sa.String(length=32), nullable=False),
        sa.Column("message", sa.Text(), nullable=False),
        sa.Column("commits", sa.Integer(), nullable=False),
        sa.Column("culprit_sha", sa.String(length=64), nullable=True),
        sa.Column("culprit_subject", sa.String(length=500), nullable=False),
        sa.Column("candidates", sa.JSON(), nullable=False),
        sa.Column("endpoints", sa.JSON(), nullable=False),
        sa.Column("alert_id", sa.Integer(), nullable=True),
        sa.Column("detection_id", sa.Integer(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["alert_id"], ["alerts.id"], ondelete="SET NULL"),
        sa.ForeignKeyConstraint(["detection_id"], ["detections.id"], ondelete="SET NULL"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("repo", "good_sha", "bad_sha", "judge", "selection"),
    )
    op.create_index("ix_bisections_alert_id", "bisections", ["alert_id"])
    op.create_index("ix_bisections_detection_id", "bisections", ["detection_id"])
    op.create_table(
        "bisection_steps",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("bisection_id", sa.Integer(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("sha", sa.String(length=64), nullable=False),
        sa.Column("subject", sa.String(length=500), nullable=False),
        sa.Column("verdict", sa.String(length=16), nullable=False),
        sa.Column("evidence", sa.JSON(), nullable=False),
        sa.Column("skip_reason", sa.Text(), nullable=False),
        sa.Column("seconds", sa.Float(), nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=True),
        sa.ForeignKeyConstraint(["bisection_id"], ["bisections.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["run_id"], ["runs.id"], ondelete="SET NULL"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_bisection_steps_bisection_id", "bisection_steps", ["bisection_id"])


def downgrade() -> None:
    op.drop_table("bisection_steps")
    op.drop_table("bisections")

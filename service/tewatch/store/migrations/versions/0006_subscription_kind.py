"""Subscriptions of a kind: signed webhooks, or the GitHub integration's pull-request comments

Revision ID: 0006_subscription_kind
Revises: 0005_ab_rounds
Create Date: 2026-12-01 15:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006_subscription_kind"
down_revision: str | None = "0005_ab_rounds"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column(
        "webhook_subscriptions",
        sa.Column(
            "kind",
            sa.Enum("webhook", "github", name="subscription_kind", native_enum=False, length=16),
            nullable=False,
            server_default="webhook",
        ),
    )


def downgrade() -> None:
    op.drop_column("webhook_subscriptions", "kind")

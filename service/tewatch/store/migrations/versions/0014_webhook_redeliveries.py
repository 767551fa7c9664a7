"""redeliveries asked for through the API, counted by the rate limit per subscription

Revision ID: 0014_webhook_redeliveries
Revises: 0013_token_scopes
Create Date: 2026-12-03 09:30:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0014_webhook_redeliveries"
down_revision: str | None = "0013_token_scopes"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "webhook_redeliveries",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column(
            "subscription_id",
            sa.Integer(),
            sa.ForeignKey("webhook_subscriptions.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column(
            "delivery_id",
            sa.String(36),
            sa.ForeignKey("webhook_deliveries.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("requested_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index(
        "ix_webhook_redeliveries_subscription", "webhook_redeliveries", ["subscription_id", "requested_at"]
    )


def downgrade() -> None:
    op.drop_index("ix_webhook_redeliveries_subscription", table_name="webhook_redeliveries")
    op.drop_table("webhook_redeliveries")

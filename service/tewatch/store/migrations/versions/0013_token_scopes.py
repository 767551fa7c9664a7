"""tokens carry a scope (upload, triage, admin); tokens made before scopes existed become admin, since
each of them could do everything, and a migration that took a right away would break its holder's
next request (docs/security.md)

Revision ID: 0013_token_scopes
Revises: 0012_case_machine
Create Date: 2026-12-03 09:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0013_token_scopes"
down_revision: str | None = "0012_case_machine"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SCOPE = sa.Enum("upload", "triage", "admin", name="token_scope", native_enum=False, length=16)


def upgrade() -> None:
    op.add_column("api_tokens", sa.Column("scope", SCOPE, nullable=False, server_default="admin"))
    # new tokens name their scope: no default that could grant admin by omission
    with op.batch_alter_table("api_tokens") as batch_op:
        batch_op.alter_column("scope", existing_type=SCOPE, server_default=None)


def downgrade() -> None:
    with op.batch_alter_table("api_tokens") as batch_op:
        batch_op.drop_column("scope")

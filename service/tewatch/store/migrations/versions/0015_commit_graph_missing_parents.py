"""the parents a stored commit of the git graph names that the graph did not hold yet
(commit_graph_missing_parents): where a later graph that sends one could close a cycle

Revision ID: 0015_graph_missing_parents
Revises: 0014_webhook_redeliveries
Create Date: 2026-12-03 09:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0015_graph_missing_parents"
down_revision: str | None = "0014_webhook_redeliveries"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_ELEMENTS = {
    "postgresql": "json_array_elements_text(CAST(g.parents AS json)) AS p(value)",
    "sqlite": "json_each(g.parents) AS p",
}


def upgrade() -> None:
    op.create_table(
        "commit_graph_missing_parents",
        sa.Column("repo", sa.String(length=200), nullable=False),
        sa.Column("parent", sa.String(length=64), nullable=False),
        sa.Column("sha", sa.String(length=64), nullable=False),
        sa.PrimaryKeyConstraint("repo", "parent", "sha"),
    )
    elements = _ELEMENTS[op.get_bind().dialect.name]
    op.execute(
        "INSERT INTO commit_graph_missing_parents (repo, parent, sha) "
        f"SELECT DISTINCT g.repo, p.value, g.sha FROM commit_graph g, {elements} "
        "WHERE NOT EXISTS (SELECT 1 FROM commit_graph n WHERE n.repo = g.repo AND n.sha = p.value)"
    )


def downgrade() -> None:
    op.drop_table("commit_graph_missing_parents")

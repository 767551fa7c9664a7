"""the (series, run) and (case, run) indexes also hold what a chart draws of each point (result status,
value and quartiles; verdict status and exception class), so a long series is read from them alone

Revision ID: 0010_covering_history_indexes
Revises: 0009_commit_graph
Create Date: 2026-12-01 21:00:00.000000
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0010_covering_history_indexes"
down_revision: str | None = "0009_commit_graph"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index(
        "ix_results_series_points", "results", ["series_id", "run_id", "status", "value", "q_25", "q_75"]
    )
    op.drop_index("ix_results_series_run", table_name="results")
    op.create_index("ix_verdicts_case_points", "verdicts", ["case_id", "run_id", "status", "exception_class"])
    op.drop_index("ix_verdicts_case_run", table_name="verdicts")


def downgrade() -> None:
    op.create_index("ix_verdicts_case_run", "verdicts", ["case_id", "run_id"])
    op.drop_index("ix_verdicts_case_points", table_name="verdicts")
    op.create_index("ix_results_series_run", "results", ["series_id", "run_id"])
    op.drop_index("ix_results_series_points", table_name="results")

"""latest verdict tables; one case archive per run instead of one raw file per case

Revision ID: 0003_latest_verdicts_archives
Revises: 0002_detection_alerts
Create Date: 2026-11-30 09:00:00.000000
"""

import hashlib
from collections.abc import Sequence
from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import op

from tewatch.store.schema import case_archive

revision: str = "0003_latest_verdicts_archives"
down_revision: str | None = "0002_detection_alerts"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

CASE_FILE_ROLES = case_archive.MEMBER_PREFIX + "%"
# (table, column, parent table, ON DELETE) of the foreign keys this revision drops on PostgreSQL
FACT_FOREIGN_KEYS = (
    ("results", "run_id", "runs", "CASCADE"),
    ("results", "series_id", "series", None),
    ("verdicts", "run_id", "runs", "CASCADE"),
    ("verdicts", "case_id", "cases", None),
)

raw_files = sa.table(
    "raw_files",
    sa.column("digest", sa.String),
    sa.column("size", sa.Integer),
    sa.column("content", sa.LargeBinary),
    sa.column("created_at", sa.DateTime(timezone=True)),
)
run_files = sa.table(
    "run_files", sa.column("run_id", sa.Integer), sa.column("role", sa.String), sa.column("digest", sa.String)
)

BACKFILL_LATEST = """
INSERT INTO latest_verdicts (case_id, run_id, verdict_id)
SELECT v.case_id, v.run_id, v.id
FROM verdicts v
JOIN (SELECT case_id, MAX(run_id) AS run_id FROM verdicts GROUP BY case_id) newest
  ON newest.case_id = v.case_id AND newest.run_id = v.run_id
"""
BACKFILL_LATEST_BRANCH = """
INSERT INTO latest_branch_verdicts (branch, case_id, run_id, verdict_id)
SELECT r.branch, v.case_id, v.run_id, v.id
FROM verdicts v
JOIN runs r ON r.id = v.run_id
JOIN (
  SELECT r2.branch AS branch, v2.case_id AS case_id, MAX(v2.run_id) AS run_id
  FROM verdicts v2 JOIN runs r2 ON r2.id = v2.run_id
  WHERE r2.branch IS NOT NULL
  GROUP BY r2.branch, v2.case_id
) newest ON newest.case_id = v.case_id AND newest.run_id = v.run_id
"""


def upgrade() -> None:
    op.create_table(
        "latest_verdicts",
        sa.Column("case_id", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("verdict_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.ForeignKeyConstraint(["case_id"], ["cases.id"]),
        sa.PrimaryKeyConstraint("case_id"),
    )
    op.create_table(
        "latest_branch_verdicts",
        sa.Column("branch", sa.String(length=200), nullable=False),
        sa.Column("case_id", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("verdict_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.ForeignKeyConstraint(["case_id"], ["cases.id"]),
        sa.PrimaryKeyConstraint("branch", "case_id"),
    )
    if op.get_bind().dialect.name == "postgresql":
        _tune_postgresql()
        _drop_fact_foreign_keys()
    op.execute(BACKFILL_LATEST)
    op.execute(BACKFILL_LATEST_BRANCH)
    _pack_case_files()


def downgrade() -> None:
    _unpack_case_archives()
    op.drop_table("latest_branch_verdicts")
    op.drop_table("latest_verdicts")
    if op.get_bind().dialect.name == "postgresql":
        op.execute("ALTER TABLE raw_files ALTER COLUMN content SET COMPRESSION default")
        for table, column, parent, ondelete in FACT_FOREIGN_KEYS:
            op.create_foreign_key(None, table, parent, [column], ["id"], ondelete=ondelete)


def _drop_fact_foreign_keys() -> None:
    """PostgreSQL checks a foreign key row by row (a query and a row lock on the parent each): for the
    15,000 results and verdicts of a typical upload that cost more than writing them. Ingest is their
    only writer and takes every id from rows of the same transaction; runs, series and cases are never
    deleted. SQLite keeps these keys: its checks are nearly free, and rebuilding `verdicts` to drop them
    would fire the ON DELETE SET NULL of the alerts that point at verdicts."""
    inspector = sa.inspect(op.get_bind())
    for table in {t for t, *_ in FACT_FOREIGN_KEYS}:
        columns = {c for t, c, *_ in FACT_FOREIGN_KEYS if t == table}
        for key in inspector.get_foreign_keys(table):
            if key["constrained_columns"] and set(key["constrained_columns"]) <= columns:
                op.drop_constraint(key["name"], table, type_="foreignkey")


def _tune_postgresql() -> None:
    # Every upload rewrites one row per case: room on each page lets the update stay on the page (HOT).
    for table in ("latest_verdicts", "latest_branch_verdicts"):
        op.execute(f"ALTER TABLE {table} SET (fillfactor = 50)")
    # pglz spends ~130 ms compressing a 3.5 MB results file, lz4 a few (PostgreSQL 14+ built with lz4).
    methods = (
        op.get_bind()
        .exec_driver_sql("SELECT enumvals FROM pg_settings WHERE name = 'default_toast_compression'")
        .scalar()
    )
    if methods and "lz4" in methods:
        op.execute("ALTER TABLE raw_files ALTER COLUMN content SET COMPRESSION lz4")


def _pack_case_files() -> None:
    """Each run's `cases/<name>` files become one archive with the role `cases`."""
    conn = op.get_bind()
    run_ids = conn.scalars(
        sa.select(run_files.c.run_id).where(run_files.c.role.like(CASE_FILE_ROLES)).distinct()
    ).all()
    prefix = len(case_archive.MEMBER_PREFIX)
    for run_id in run_ids:
        members = conn.execute(
            sa.select(run_files.c.role, raw_files.c.content)
            .join(raw_files, raw_files.c.digest == run_files.c.digest)
            .where(run_files.c.run_id == run_id, run_files.c.role.like(CASE_FILE_ROLES))
        ).all()
        archive = case_archive.pack([(role[prefix:], bytes(content)) for role, content in members])
        digest = _store_raw_file(conn, archive)
        conn.execute(
            run_files.delete().where(run_files.c.run_id == run_id, run_files.c.role.like(CASE_FILE_ROLES))
        )
        conn.execute(run_files.insert().values(run_id=run_id, role=case_archive.ROLE, digest=digest))
    _delete_unreferenced_raw_files(conn)


def _unpack_case_archives() -> None:
    conn = op.get_bind()
    archives = conn.execute(
        sa.select(run_files.c.run_id, raw_files.c.content)
        .join(raw_files, raw_files.c.digest == run_files.c.digest)
        .where(run_files.c.role == case_archive.ROLE)
    ).all()
    for run_id, content in archives:
        rows = [
            {
                "run_id": run_id,
                "role": case_archive.MEMBER_PREFIX + name,
                "digest": _store_raw_file(conn, data),
            }
            for name, data in case_archive.unpack(bytes(content))
        ]
        conn.execute(
            run_files.delete().where(run_files.c.run_id == run_id, run_files.c.role == case_archive.ROLE)
        )
        if rows:
            conn.execute(run_files.insert(), rows)
    _delete_unreferenced_raw_files(conn)


def _store_raw_file(conn, content: bytes) -> str:
    digest = hashlib.sha256(content).hexdigest()
    if conn.execute(sa.select(raw_files.c.digest).where(raw_files.c.digest == digest)).first() is None:
        conn.execute(
            raw_files.insert().values(
                digest=digest, size=len(content), content=content, created_at=datetime.now(UTC)
            )
        )
    return digest


def _delete_unreferenced_raw_files(conn) -> None:
    conn.execute(raw_files.delete().where(raw_files.c.digest.not_in(sa.select(run_files.c.digest))))

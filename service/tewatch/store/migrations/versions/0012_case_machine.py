"""the asv machine a case was measured on, part of its identity: one series per machine, as asv draws one
graph per machine

A case gets `machine` (machine.json's `machine`, asv's identity of a machine) and `group_key`, the case
on any machine of its GPU model (the fingerprint cases had until now); (group_key, machine) is unique
(an index that also finds a group's machines).

Stored cases: a case measured on one machine only (a deployment's usual GPU history) gets that machine
and keeps its fingerprint, and so do its series: nothing is cut in two, and no link or alert key changes.
A case measured on several machines is split: the machine with the most results and verdicts (the
earliest, on a tie) keeps the case, its fingerprint and its series; each other machine gets a case and
series of its own (fingerprints.machine_case_fingerprint), and its runs' results, verdicts, pull-request and
release comparisons move there. Change points, detections and alerts found on the merged history
stay where they were; `tewatch detect` finds them again per machine. The latest-verdict tables are
rebuilt when a case was split. A case without any run keeps an empty machine.

Downgrade drops only the unique index: split cases stay apart (older code finds only the one that kept
the fingerprint), and an upgrade again gives machines to the cases written in between alone. A case the
older code wrote for a machine and group that already had one (a group first stored by this revision's
code) would break the index; it is not merged.

Revision ID: 0012_case_machine
Revises: 0011_release_comparisons
Create Date: 2026-12-03 09:00:00.000000
"""

import hashlib
import json
from collections import defaultdict
from collections.abc import Sequence
from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import op

revision: str = "0012_case_machine"
down_revision: str | None = "0011_release_comparisons"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

CASE_COLUMNS = "case_name, params, gpu_model, compute_capability, backend, recipe, mode, rank, world_size, labels, environment"
# (case, machine name) -> (rows, first run): results through the case's series, and its verdicts
MEASURED = """
SELECT s.case_id, m.name, COUNT(*), MIN(r.id)
FROM results x JOIN series s ON s.id = x.series_id JOIN runs r ON r.id = x.run_id
JOIN machines m ON m.id = r.machine_id GROUP BY s.case_id, m.name
"""
VERDICTED = """
SELECT v.case_id, m.name, COUNT(*), MIN(r.id)
FROM verdicts v JOIN runs r ON r.id = v.run_id JOIN machines m ON m.id = r.machine_id
GROUP BY v.case_id, m.name
"""
RUNS_ON = "SELECT r.id FROM runs r JOIN machines m ON m.id = r.machine_id WHERE m.name = :machine"
NO_DATE = datetime(1970, 1, 1, tzinfo=UTC)
RANKED = """
SELECT {branch} v.case_id AS case_id, v.run_id AS run_id, v.id AS verdict_id,
       COALESCE(c.ordered_at, c.committed_at, :no_date) AS committed_at,
       COALESCE(r.started_at, r.uploaded_at) AS started_at,
       ROW_NUMBER() OVER (
         PARTITION BY {partition} v.case_id
         ORDER BY COALESCE(c.ordered_at, c.committed_at, :no_date) DESC,
                  COALESCE(r.started_at, r.uploaded_at) DESC, v.run_id DESC
       ) AS place
FROM verdicts v JOIN runs r ON r.id = v.run_id JOIN commits c ON c.id = r.commit_id
{where}
"""
LATEST = {
    "latest_verdicts": ("case_id, run_id, verdict_id, committed_at, started_at", RANKED.format(
        branch="", partition="", where=""
    )),
    "latest_branch_verdicts": ("branch, case_id, run_id, verdict_id, committed_at, started_at", RANKED.format(
        branch="r.branch AS branch,", partition="r.branch,", where="WHERE r.branch IS NOT NULL"
    )),
}  # fmt: skip


def _digest(value: object) -> str:
    """fingerprints.digest_of, as of this revision."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def upgrade() -> None:
    conn = op.get_bind()
    if "group_key" not in {c["name"] for c in sa.inspect(conn).get_columns("cases")}:
        # plain ALTER TABLEs: SQLite's batch mode would copy `cases`, which other tables' foreign keys name
        op.add_column(
            "cases", sa.Column("group_key", sa.String(length=64), nullable=False, server_default="")
        )
        op.add_column("cases", sa.Column("machine", sa.String(length=200), nullable=False, server_default=""))
    # after a downgrade, only the cases written since (by code that knew no machines) are new to this
    op.execute("UPDATE cases SET group_key = fingerprint WHERE group_key = ''")
    split = _give_cases_their_machines(conn)
    op.create_index("uq_cases_group_key_machine", "cases", ["group_key", "machine"], unique=True)
    if split:
        _rebuild_latest_verdicts(conn)


def _give_cases_their_machines(conn: sa.Connection) -> bool:
    """Every measured case gets its machine, cases of several machines split; whether any was."""
    machines: dict[int, dict[str, tuple[int, int]]] = defaultdict(dict)
    without = set(conn.execute(sa.text("SELECT id FROM cases WHERE machine = ''")).scalars())
    for statement in (MEASURED, VERDICTED):
        for case_id, name, rows, first_run in conn.execute(sa.text(statement)):
            if case_id not in without:
                continue
            count, first = machines[case_id].get(name, (0, first_run))
            machines[case_id][name] = (count + rows, min(first, first_run))
    keeper = sa.text("UPDATE cases SET machine = :machine WHERE id = :case_id")
    kept = [
        {"case_id": case_id, "machine": min(found, key=lambda n: (-found[n][0], found[n][1], n))}
        for case_id, found in machines.items()
    ]
    if kept:
        conn.execute(keeper, kept)
    for row in kept:
        for machine in sorted(set(machines[row["case_id"]]) - {row["machine"]}):
            _split_off(conn, row["case_id"], machine)
    return any(len(found) > 1 for found in machines.values())


def _split_off(conn: sa.Connection, case_id: int, machine: str) -> None:
    """A case of its own for `machine`, with the results, verdicts and comparisons of its runs."""
    group_key = conn.execute(
        sa.text("SELECT group_key FROM cases WHERE id = :id"), {"id": case_id}
    ).scalar_one()
    fingerprint = _digest({"case_group": group_key, "machine": machine})
    conn.execute(
        sa.text(
            f"INSERT INTO cases (fingerprint, group_key, machine, {CASE_COLUMNS}) "
            f"SELECT :fingerprint, group_key, :machine, {CASE_COLUMNS} FROM cases WHERE id = :id"
        ),
        {"fingerprint": fingerprint, "machine": machine, "id": case_id},
    )
    new_case = conn.execute(
        sa.text("SELECT id FROM cases WHERE fingerprint = :fingerprint"), {"fingerprint": fingerprint}
    ).scalar_one()
    on_machine = {"machine": machine}
    series = conn.execute(
        sa.text(
            "SELECT s.id, b.id, b.name FROM series s JOIN benchmarks b ON b.id = s.benchmark_id "
            f"WHERE s.case_id = :id AND EXISTS (SELECT 1 FROM results x WHERE x.series_id = s.id "
            f"AND x.run_id IN ({RUNS_ON}))"
        ),
        {"id": case_id, **on_machine},
    ).all()
    for old_series, benchmark_id, benchmark in series:
        series_fingerprint = _digest({"benchmark": benchmark, "case": fingerprint})
        conn.execute(
            sa.text(
                "INSERT INTO series (fingerprint, case_id, benchmark_id) VALUES (:fp, :case_id, :benchmark)"
            ),
            {"fp": series_fingerprint, "case_id": new_case, "benchmark": benchmark_id},
        )
        new_series = conn.execute(
            sa.text("SELECT id FROM series WHERE fingerprint = :fp"), {"fp": series_fingerprint}
        ).scalar_one()
        moved = {"old": old_series, "new": new_series, **on_machine}
        conn.execute(
            sa.text(f"UPDATE results SET series_id = :new WHERE series_id = :old AND run_id IN ({RUNS_ON})"),
            moved,
        )
        for table in ("pr_comparisons", "release_comparisons"):
            conn.execute(
                sa.text(
                    f"UPDATE {table} SET series_id = :new WHERE series_id = :old AND head_run_id IN ({RUNS_ON})"
                ),
                moved,
            )
    conn.execute(
        sa.text(f"UPDATE verdicts SET case_id = :new WHERE case_id = :old AND run_id IN ({RUNS_ON})"),
        {"old": case_id, "new": new_case, **on_machine},
    )


def _rebuild_latest_verdicts(conn: sa.Connection) -> None:
    for table, (columns, ranked) in LATEST.items():
        conn.execute(sa.text(f"DELETE FROM {table}"))
        statement = sa.text(
            f"INSERT INTO {table} ({columns}) SELECT {columns} FROM ({ranked}) ranked WHERE place = 1"
        )
        conn.execute(statement.bindparams(sa.bindparam("no_date", NO_DATE, type_=sa.DateTime(timezone=True))))


def downgrade() -> None:
    """The columns stay (older code leaves them be; an upgrade again keeps what they hold), the unique
    index goes (older code writes cases without them)."""
    op.drop_index("uq_cases_group_key_machine", "cases")

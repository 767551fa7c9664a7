"""On a branch, a case whose kernels changed from the branch's run before opens a `kernels` alert
(tewatch.detect.kernels, docs/kernels.md): the tables of the branch's earlier runs are identical code
for the noise rule (a family of names seen alternating among them is one kernel)."""

from __future__ import annotations

from sqlalchemy import Engine
from sqlalchemy.orm import Session

from tewatch.alerts.lifecycle import open_alert
from tewatch.core.metric_names import GRAPH_BREAKS
from tewatch.detect.kernels import kernel_set_changes, learn_autotuned
from tewatch.pipeline.kernels import kernel_table, metric_values
from tewatch.pipeline.labels import case_label, machine_of, measured_on
from tewatch.store.engine.database import write_session
from tewatch.store.reads.kernel_reads import earlier_kernel_tables, run_kernel_tables
from tewatch.store.schema.alert_models import AlertKind
from tewatch.store.schema.models import Case, Run

EARLIER_TABLES = 8  # the branch's runs before, per case, the noise rule learns from


def alert_kernel_changes(engine: Engine, run_id: int) -> int:
    """Open an alert per case of a branch run whose kernels changed; returns how many were opened."""
    with write_session(engine) as session:
        run = session.get(Run, run_id)
        if run is None or run.pr_number is not None or not run.branch:
            return 0
        conn = session.connection()
        head = {t.case_id: t for t in run_kernel_tables(conn, [run_id])}
        earlier = earlier_kernel_tables(conn, list(head), run.branch, run_id, EARLIER_TABLES)
        runs = [run_id, *{t.run_id for tables in earlier.values() for t in tables}]
        breaks = metric_values(session, runs, GRAPH_BREAKS)
        opened = 0
        for case_id, row in head.items():
            before = earlier.get(case_id)
            if not before:
                continue
            tables = [kernel_table(t, breaks.get((t.run_id, case_id))) for t in before]
            changes = kernel_set_changes(
                tables[0], kernel_table(row, breaks.get((run_id, case_id))), learn_autotuned(tables)
            )
            if changes:
                opened += _open(session, run, case_id, before[0].run_id, [c.describe() for c in changes])
        return opened


def _open(session: Session, run: Run, case_id: int, before_run_id: int, changes: list[str]) -> int:
    case = session.get(Case, case_id)
    if case is None:
        return 0
    where = measured_on(case.gpu_model, machine_of(session, run.id))
    _, created = open_alert(
        session,
        f"kernels:{case_id}:{run.id}",
        AlertKind.kernels,
        f"{case_label(case)}{where}: {'; '.join(changes)}",
        case_id=case_id,
        run_id=run.id,
        branch=run.branch,
        gpu_model=case.gpu_model,
        details={"changes": changes, "since_run_id": before_run_id},
    )
    return int(created)

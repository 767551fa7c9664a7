"""Machines as typed rows, for the API's machine list and the machines page alike; with their runs and the
environments they ran."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, func, select

from tewatch.store.reads.table_rows import EnvironmentFacts, MachineFacts, columns, row_of
from tewatch.store.schema.models import Environment, Machine, Run


def machines(conn: Connection, by_gpu_model: bool = False) -> list[MachineFacts]:
    """Every machine, by id (`by_gpu_model`: by GPU model, name and id)."""
    order = (Machine.gpu_model, Machine.name, Machine.id) if by_gpu_model else (Machine.id,)
    return [row_of(MachineFacts, r) for r in conn.execute(select(*columns(MachineFacts)).order_by(*order))]


def machines_by_id(conn: Connection, machine_ids: Collection[int]) -> dict[int, MachineFacts]:
    found = conn.execute(select(*columns(MachineFacts)).where(Machine.id.in_(list(machine_ids))))
    return {m.id: m for m in (row_of(MachineFacts, r) for r in found)}


def environments_by_id(conn: Connection, environment_ids: Collection[int]) -> dict[int, EnvironmentFacts]:
    found = conn.execute(select(*columns(EnvironmentFacts)).where(Environment.id.in_(list(environment_ids))))
    return {e.id: e for e in (row_of(EnvironmentFacts, r) for r in found)}


@dataclass(frozen=True)
class MachineRuns:
    runs: int
    last_run_id: int | None  # the run that started last (by upload time where a run recorded no start)
    last_run_started: datetime | None  # its start; None if it recorded none
    last_run_uploaded: datetime | None


NO_RUNS = MachineRuns(0, None, None, None)


def machine_runs(conn: Connection) -> dict[int, MachineRuns]:
    """Machine id -> how many runs it uploaded and which started last (machines without runs left out).
    One grouped pass finds each machine's count and latest start; the run that has it is then looked up
    per machine (a handful), instead of ranking every run in a window."""
    when = func.coalesce(Run.started_at, Run.uploaded_at)
    found = {}
    grouped = select(Run.machine_id, func.count(), func.max(when)).group_by(Run.machine_id)
    for machine_id, count, latest in conn.execute(grouped).all():
        last = conn.execute(
            select(Run.id, Run.started_at, Run.uploaded_at)
            .where(Run.machine_id == machine_id, when == latest)
            .order_by(Run.id.desc())
            .limit(1)
        ).one()
        found[machine_id] = MachineRuns(count, last.id, last.started_at, last.uploaded_at)
    return found


def machine_environments(conn: Connection) -> dict[int, list[EnvironmentFacts]]:
    """Machine id -> the environments its runs ran in, by id."""
    pairs = conn.execute(select(Run.machine_id, Run.environment_id).distinct()).all()
    envs = environments_by_id(conn, {e for _m, e in pairs})
    out: dict[int, list[EnvironmentFacts]] = defaultdict(list)
    for machine_id, environment_id in pairs:
        out[machine_id].append(envs[environment_id])
    return {m: sorted(found, key=lambda e: e.id) for m, found in out.items()}

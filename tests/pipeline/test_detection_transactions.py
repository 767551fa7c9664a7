"""Detection computes outside any write transaction and stores in short ones: another writer gets the
lock while it computes, and a run landing meanwhile is in what it stores (SQLite and PostgreSQL)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from tests.detect.store_history import START, StoreHistory
from tewatch.alerts.lifecycle import change_status, open_alert
from tewatch.pipeline.branch_detection import detect_branch
from tewatch.store.engine.database import make_engine, write_session
from tewatch.store.schema.alert_models import Alert, AlertKind, AlertStatus, Detection
from tewatch.store.schema.models import Commit, Result, ResultStatus, Run, VerdictStatus

URL = "https://tewatch.example"
STEP_AT, RUNS = 40, 60


@pytest.fixture
def impatient(db_url):
    """Another writer, waiting at most half a second for a lock."""
    engine = make_engine(db_url, lock_wait_seconds=0.5)
    yield engine
    engine.dispose()


def step_history(engine) -> tuple[int, int, int]:
    """A series on main that steps up 10 % at run STEP_AT: (machine, environment, series) ids."""
    with write_session(engine) as session:
        history = StoreHistory(session)
        for i in range(RUNS):
            history.add_run(f"{i:040x}", 1e-3 * (1.10 if i >= STEP_AT else 1.0), VerdictStatus.passed)
        run = history.runs[-1]
        return run.machine_id, run.environment_id, history.series.id


def test_another_writer_gets_the_lock_while_detection_computes(engine, impatient):
    step_history(engine)
    with write_session(engine) as session:
        alert_id = open_alert(session, "regression:other", AlertKind.regression, "rht slower")[0].id
    acknowledged = []

    def acknowledge(_: int) -> None:  # called between two series' computations
        with write_session(impatient) as session:
            alert = session.get(Alert, alert_id)
            to = AlertStatus.open if alert.status == AlertStatus.acknowledged else AlertStatus.acknowledged
            change_status(session, alert, to, "oncall")
        acknowledged.append(to)

    summary = detect_branch(engine, "main", URL, progress=acknowledge)
    assert summary.change_points == 1 and acknowledged


def test_a_run_landing_while_detection_computes_is_in_what_it_stores(engine):
    machine_id, environment_id, series_id = step_history(engine)
    landed = []

    def land_a_run(_: int) -> None:
        if landed:
            return
        with write_session(engine) as session:
            commit = Commit(sha=f"{RUNS:040x}", branch="main", committed_at=START + timedelta(hours=RUNS))
            run = Run(
                digest="landed",
                machine_id=machine_id,
                environment_id=environment_id,
                commit=commit,
                branch="main",
                started_at=START + timedelta(hours=RUNS),
            )
            session.add(run)
            session.flush()
            session.add(
                Result(
                    run_id=run.id,
                    series_id=series_id,
                    status=ResultStatus.ok,
                    value=1.1e-3,
                    samples=[1.1e-3] * 30,
                )
            )
        landed.append(run.id)

    summary = detect_branch(engine, "main", URL, progress=land_a_run)
    assert landed and summary.change_points == 1 and summary.series == 1
    with Session(engine) as session:
        [detection] = session.scalars(select(Detection)).all()
    assert detection.n_after == RUNS - STEP_AT + 1  # the landed run is counted after the step

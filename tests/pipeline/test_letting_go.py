"""Regression alerts let go (SQLite and PostgreSQL): a regression the series has undone resolves its alert,
naming the commit; a shift most series of an environment share is one alert about the environment."""

from __future__ import annotations

import re

import numpy as np
from sqlalchemy import select
from sqlalchemy.orm import Session

from tests.detect.store_history import StoreHistory, add_run, main_commit
from tewatch.pipeline.branch_detection import detect_branch
from tewatch.store.schema.alert_models import Alert, AlertStatus, AlertStatusChange, Detection
from tewatch.store.schema.models import Benchmark, Case, Environment, Machine, Series, VerdictStatus

URL = "https://tewatch.example"


def alerts(engine) -> list[Alert]:
    with Session(engine) as session:
        found = session.scalars(select(Alert).order_by(Alert.id)).all()
        for alert in found:
            _ = [c.note for c in alert.status_changes]  # loaded while the session is open
        return list(found)


def add_runs(engine, levels: list[float], start: int = 0) -> None:
    with Session(engine) as session, session.begin():
        history = StoreHistory(session) if start == 0 else StoreHistory.reopen(session)
        for i, level in enumerate(levels, start):
            history.add_run(f"{i:040x}", 1e-3 * level, VerdictStatus.passed)


def test_a_reverted_regression_resolves_its_alert_naming_the_commit_that_brought_it_back(engine):
    add_runs(engine, [1.0] * 40 + [1.2] * 20)
    detect_branch(engine, "main", URL)
    [alert] = alerts(engine)
    assert alert.status is AlertStatus.open
    add_runs(engine, [1.0] * 20, start=60)
    summary = detect_branch(engine, "main", URL)
    assert summary.returned == 1
    [alert] = alerts(engine)
    assert alert.status is AlertStatus.resolved
    assert alert.details["returned_at_commit"] == f"{60:040x}"
    assert f"back at the earlier level since commit {60:040x}" in alert.status_changes[-1].note
    with Session(engine) as session:
        directions = [d.direction for d in session.scalars(select(Detection).order_by(Detection.id))]
    assert directions == ["regression", "improvement"]  # both steps stay on the series
    assert detect_branch(engine, "main", URL).returned == 0  # nothing more to let go


def test_a_regression_only_halved_stays_open(engine):
    add_runs(engine, [1.0] * 40 + [2.0] * 20 + [1.5] * 20)
    detect_branch(engine, "main", URL)
    [alert] = alerts(engine)
    assert alert.status is AlertStatus.open


def test_an_open_alert_follows_its_change_point_as_later_history_places_it(engine):
    add_runs(engine, [1.0] * 40 + [1.2] * 5)
    detect_branch(engine, "main", URL)
    [first] = alerts(engine)
    add_runs(engine, [1.2] * 40, start=45)
    detect_branch(engine, "main", URL)
    [alert] = alerts(engine)
    assert alert.id == first.id and alert.status is AlertStatus.open
    start, end = alert.details["commit_range"].split("..")
    assert start <= f"{40:040x}"[:10] <= end  # the culprit lies in the range the alert names
    assert alert.details["commit_range"] in alert.title


def sha(index: int) -> str:
    return f"{index:04d}".ljust(40, "f")


class Environment_:
    """SERIES benchmarks measured together on one machine in one asv environment, a run per commit."""

    def __init__(self, session: Session, series: int, machine: str = "ci-box", env: str = "py3.12"):
        self.session = session
        self.rng = np.random.default_rng(11)
        self.machine = Machine(digest=f"m-{machine}", name=machine, gpu_model="unknown")
        self.environment = Environment(digest=f"env-{env}", torch="", te_version="")
        self.series = []
        for i in range(series):
            case = Case(
                fingerprint=f"{machine}-{env}-{i}",
                case_name=f"bench.B{i}",
                params={},
                gpu_model="unknown",
                environment=env,
            )
            benchmark = Benchmark(name=f"bench.B{i}.time", case_name=f"bench.B{i}", unit="seconds")
            self.series.append(
                Series(fingerprint=f"series-{machine}-{env}-{i}", case=case, benchmark=benchmark)
            )
        session.add_all([self.machine, self.environment, *self.series])
        session.flush()

    def add_run(self, index: int, levels: list[float]) -> None:
        noise = np.exp(self.rng.normal(0.0, 0.01, len(self.series)))
        add_run(
            self.session,
            self.machine,
            self.environment,
            main_commit(self.session, sha(index), index),
            index,
            {
                s.id: 1e-3 * (i + 1) * level * n
                for i, (s, level, n) in enumerate(zip(self.series, levels, noise, strict=True))
            },
            digest=f"run-{self.machine.name}-{index}",
        )


def test_a_shift_most_series_of_an_environment_share_is_one_alert_that_resolves_when_they_return(engine):
    moved = 8  # of 10: two benchmarks the shift leaves alone
    with Session(engine) as session, session.begin():
        environment = Environment_(session, 10)
        for i in range(60):
            shifted = i >= 40
            environment.add_run(i, [1.1 if shifted and s < moved else 1.0 for s in range(10)])
    summary = detect_branch(engine, "main", URL)
    assert (summary.new_regressions, summary.environment_alerts) == (moved, 1)
    [alert] = alerts(engine)
    assert alert.status is AlertStatus.open and alert.series_id is None
    assert re.fullmatch(
        r"\[whole environment\] ci-box py3\.12: 8 of 10 series \+(9\.\d|10\.\d) % \(median\) since 0040ffffff",
        alert.title,
    )
    assert alert.details["commit"] == sha(40) and alert.details["series"] == moved
    assert detect_branch(engine, "main", URL).environment_alerts == 0  # idempotent
    with Session(engine) as session:
        two = list(session.scalars(select(Series.id).order_by(Series.id).limit(2)))
    detect_branch(engine, "main", URL, series_ids=two)  # two series cannot tell the shift is gone
    assert [a.status for a in alerts(engine)] == [AlertStatus.open]

    with Session(engine) as session, session.begin():
        environment = Environment_.__new__(Environment_)
        environment.session, environment.rng = session, np.random.default_rng(12)
        environment.machine = session.scalar(select(Machine))
        environment.environment = session.scalar(select(Environment))
        environment.series = list(session.scalars(select(Series).order_by(Series.id)))
        for i in range(60, 80):
            environment.add_run(i, [1.0] * 10)
    detect_branch(engine, "main", URL)
    [alert] = alerts(engine)
    assert alert.status is AlertStatus.resolved
    assert alert.details["returned_at_commit"] == sha(60)
    assert "most of its series are back at the earlier level" in alert.status_changes[-1].note


def test_a_shift_of_a_few_series_keeps_an_alert_each(engine):
    with Session(engine) as session, session.begin():
        environment = Environment_(session, 12)
        for i in range(60):
            environment.add_run(i, [1.1 if i >= 40 and s < 3 else 1.0 for s in range(12)])
    summary = detect_branch(engine, "main", URL)
    assert (summary.new_regressions, summary.environment_alerts) == (3, 0)
    assert [a.series_id is not None for a in alerts(engine)] == [True] * 3


def test_history_detection_alerts_carry_their_status_changes(engine):
    add_runs(engine, [1.0] * 40 + [1.2] * 20 + [1.0] * 20)
    detect_branch(engine, "main", URL)
    with Session(engine) as session:
        changes = session.scalars(select(AlertStatusChange.to_status).order_by(AlertStatusChange.id)).all()
    assert changes == ["open", "resolved"]  # opened and let go in one pass over the whole history

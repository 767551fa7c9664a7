"""Detection after a batch of uploads in one pass (tewatch.pipeline.batch), against a real store."""

from __future__ import annotations

import numpy as np
from sqlalchemy import select
from sqlalchemy.orm import Session

from tests.detect.store_history import StoreHistory
from tewatch.pipeline.batch import detect_after_uploads
from tewatch.pipeline.branch_detection import detect_branch
from tewatch.store.engine.database import make_engine
from tewatch.store.schema.alert_models import Alert, AlertStatus, Detection
from tewatch.store.schema.models import Commit, VerdictStatus

URL = "https://tewatch.example"


def test_a_batch_uploaded_out_of_commit_order_is_replayed_in_commit_order(db_url):
    engine = make_engine(db_url)
    statuses = [VerdictStatus.passed] * 20 + [VerdictStatus.error] * 5 + [VerdictStatus.passed] * 35
    with Session(engine) as session, session.begin():
        history = StoreHistory(session)
        order = list(range(60))[::-1]  # newest commit uploaded first
        ids = [
            history.add_run(f"{i:040x}", 1e-3 * (1.10 if i >= 40 else 1.0), statuses[i], at=i).id
            for i in order
        ]
    summary = detect_after_uploads(engine, ids, URL)
    assert (summary.correctness_alerts, summary.resolved_alerts) == (1, 1)
    assert (summary.change_points, summary.new_regressions) == (1, 1)
    with Session(engine) as session:
        correctness, regression = sorted(session.scalars(select(Alert)).all(), key=lambda a: a.kind.value)
        [detection] = session.scalars(select(Detection)).all()
        assert (
            correctness.status == AlertStatus.resolved
            and correctness.details["fixed_by_commit"] == f"{25:040x}"
        )
        assert correctness.details["previous"] == "pass"
        assert regression.status == AlertStatus.open
        assert session.get(Commit, detection.commit_id).sha == f"{40:040x}"
    assert detect_branch(engine, "main", URL).change_points == 0
    assert detect_after_uploads(engine, ids, URL).correctness_alerts == 0  # twice adds nothing
    engine.dispose()


def test_a_change_point_later_history_withdraws_resolves_its_alert(db_url):
    engine = make_engine(db_url)
    with Session(engine) as session, session.begin():
        history = StoreHistory(session)
        for i in range(60):  # five slow runs at the end: a step, as far as anyone can tell yet
            history.add_run(f"{i:040x}", 1e-3 * (1.10 if i >= 55 else 1.0), VerdictStatus.passed)
    assert detect_branch(engine, "main", URL).new_regressions == 1
    # later runs spread by 5 % about the old level: five runs 10 % slower were noise of that, no level
    levels = np.exp(np.random.default_rng(3).normal(0.0, 0.05, 140))
    with Session(engine) as session, session.begin():
        history = StoreHistory.reopen(session)
        ids = [
            history.add_run(f"{i:040x}", 1e-3 * level, VerdictStatus.passed).id
            for i, level in zip(range(60, 200), levels, strict=True)
        ]
    summary = detect_after_uploads(engine, ids, URL)
    assert (summary.withdrawn, summary.resolved_alerts, summary.change_points) == (1, 1, 0)
    with Session(engine) as session:
        [alert] = session.scalars(select(Alert)).all()
        [detection] = session.scalars(select(Detection)).all()
        assert not detection.active and alert.detection_id == detection.id
        assert alert.status == AlertStatus.resolved and alert.details["withdrawn_at_commit"] == f"{199:040x}"
        assert [c.to_status for c in alert.status_changes] == ["open", "resolved"]
    engine.dispose()

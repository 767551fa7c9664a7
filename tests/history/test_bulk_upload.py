"""A batch of real asv uploads (django's history) through `tewatch upload` into a real service: one
detection pass after the last upload does what a pass over the whole branch would."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from tests.conftest import served_sqlite
from tests.history.django_data import django_results
from tests.uploads import cli_upload
from tewatch.pipeline.branch_detection import detect_branch
from tewatch.store.engine.database import make_engine
from tewatch.store.schema.alert_models import Alert, Detection


def test_a_folder_of_runs_is_detected_once_after_its_last_upload(tmp_path):
    results = django_results(tmp_path / "data", files=240)
    with served_sqlite(tmp_path) as (server, db_url):
        done = cli_upload(server, results, "--branch", "main")
        assert done.returncode == 0, done.stderr
        assert done.stdout.count(" created: ") == 240
        assert "detection after 240 runs: " in done.stderr
    engine = make_engine(db_url)
    with Session(engine) as session:
        active = session.scalars(select(Detection).where(Detection.active)).all()
        alerts = len(session.scalars(select(Alert)).all())
    assert active and alerts
    again = detect_branch(engine, "main", "http://127.0.0.1")
    engine.dispose()
    assert (again.change_points, again.withdrawn, again.new_regressions) == (0, 0, 0)

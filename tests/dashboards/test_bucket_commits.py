"""The long-history chart's buckets name their first and last commit as the point tooltips do: a TE
release installed without its commit by its version, not by the stand-in sha it is filed under."""

from __future__ import annotations

from sqlalchemy.orm import Session

from tests.detect.store_history import StoreHistory
from tewatch.core.te_releases import version_hash
from tewatch.store.engine.database import make_engine
from tewatch.store.engine.migrate import upgrade
from tewatch.store.reads.series_reads import series_header
from tewatch.store.schema.models import VerdictStatus
from tewatch_dashboards.series_chart import MAX_DETAILED_POINTS, build

RUNS = MAX_DETAILED_POINTS + 40  # more than one chart draws point by point


def test_a_bucket_names_a_stand_in_commit_by_its_te_version(db_url):
    upgrade(db_url)
    engine = make_engine(db_url)
    with Session(engine) as session:
        history = StoreHistory(session)
        for i in range(RUNS - 1):
            history.add_run(f"{i:040x}", 1.0, VerdictStatus.passed)
        history.add_run(version_hash(history.environment.te_version), 1.0, VerdictStatus.passed)
        series_id = history.series.id
        session.commit()
    with engine.connect() as conn:
        header = series_header(conn, series_id)
        assert header is not None
        buckets = build(conn, header, last=None).as_json()["buckets"]
    engine.dispose()
    assert len(buckets) > 1
    assert buckets[0]["first_commit"] == f"{0:07x} · TE 2.20.2"
    assert buckets[-1]["last_commit"] == "TE 2.20.2"
    assert all(b["first_commit"] and b["last_commit"] for b in buckets)

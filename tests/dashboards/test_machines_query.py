"""/machines' last run: the machine's run that started last, whatever order the runs were uploaded in."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import update
from sqlalchemy.orm import Session

from tests.uploads import bundle_of, tiny_run
from tewatch.ingest.service import ingest_bundle
from tewatch.store.engine.database import make_engine
from tewatch.store.schema.models import Run
from tewatch_dashboards.views.runs import machine_rows


def utc(when: datetime | None) -> datetime | None:
    """SQLite gives times back without their zone (they are stored in UTC)."""
    return when if when is None or when.tzinfo else when.replace(tzinfo=UTC)


def test_the_last_run_is_the_one_that_started_last(db_url):
    engine = make_engine(db_url)
    try:
        first, second = (ingest_bundle(engine, bundle_of(tiny_run(i), branch="main")).run_id for i in (0, 1))
        later = datetime(2026, 11, 30, 8, 0, tzinfo=UTC)
        with Session(engine) as session, session.begin():  # the first upload ran after the second
            session.execute(update(Run).where(Run.id == first).values(started_at=later))
        with Session(engine) as session:
            [row] = machine_rows(session.connection())
            assert (row.runs, row.last_run_id, utc(row.last_run_started)) == (2, first, later)
        with Session(engine) as session, session.begin():  # a run that recorded no start counts by its upload
            session.execute(
                update(Run)
                .where(Run.id == second)
                .values(started_at=None, uploaded_at=datetime(2027, 1, 1, tzinfo=UTC))
            )
        with Session(engine) as session:
            [row] = machine_rows(session.connection())
            assert (row.last_run_id, row.last_run_started) == (second, None)
            assert utc(row.last_run_uploaded) == datetime(2027, 1, 1, tzinfo=UTC)
    finally:
        engine.dispose()

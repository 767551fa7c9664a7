"""What the series page, its chart data and its SVG accept (routes.series.asked_chart), against a real store:
one check for the three, each answering a refusal in its own format."""

from __future__ import annotations

import pytest
from sqlalchemy.orm import Session

from tests.detect.store_history import StoreHistory
from tewatch.store.engine.database import make_engine
from tewatch.store.schema.models import VerdictStatus
from tewatch_dashboards.routes.series import Refused, asked_chart


@pytest.fixture
def series_id(db_url):
    engine = make_engine(db_url)
    with Session(engine) as session, session.begin():
        history = StoreHistory(session)
        history.add_run("a" * 40, 1e-3, VerdictStatus.passed)
        found = history.series.id
    yield engine, found
    engine.dispose()


def test_a_known_series_range_and_scale_give_the_header_and_the_number_of_points(series_id):
    engine, sid = series_id
    with engine.connect() as conn:
        header, last = asked_chart(conn, sid, "100", "log")
        assert (header.series_id, header.benchmark, last) == (sid, "gemm.Gemm.time", 100)
        assert asked_chart(conn, sid, "all", "auto")[1] is None


@pytest.mark.parametrize(
    ("offset", "last", "scale", "status", "words"),
    [
        (1, "300", "auto", 404, "There is no series"),
        (0, "42", "auto", 400, "last must be one of 100, 300, 1000, all, got '42'"),
        (0, "300", "cubic", 400, "scale must be one of"),
    ],
)
def test_an_unknown_series_range_or_scale_is_refused(series_id, offset, last, scale, status, words):
    engine, sid = series_id
    with engine.connect() as conn, pytest.raises(Refused) as refused:
        asked_chart(conn, sid + offset, last, scale)
    assert refused.value.status == status and words in refused.value.detail

"""The pipeline's tests run against a real store: an engine on each test's own database."""

from __future__ import annotations

import pytest

from tewatch.store.engine.database import make_engine


@pytest.fixture
def engine(db_url):
    engine = make_engine(db_url)
    yield engine
    engine.dispose()

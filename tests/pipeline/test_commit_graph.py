"""A git graph placed over stored commits (tewatch.ingest.commit_graph), on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from sqlalchemy.orm import Session

from tests.detect.store_history import START, StoreHistory
from tewatch.ingest.commit_graph import find_cycle, graph_order, store_graph
from tewatch.ingest.errors import IngestError
from tewatch.pipeline.history import branch_histories
from tewatch.store.engine.database import make_engine, write_connection
from tewatch.store.reads import queries
from tewatch.store.schema.models import VerdictStatus


def test_a_graph_reorders_histories_and_the_latest_verdicts(db_url):
    engine = make_engine(db_url)
    shas = [f"{i:040x}" for i in range(6)]
    with Session(engine) as session, session.begin():
        history = StoreHistory(session)
        for i, sha in enumerate(shas):  # dated 0..5 hours, but the graph says 5 is the root and 0 the tip
            history.add_run(sha, 1e-3, VerdictStatus.error if i == 0 else VerdictStatus.passed)
    root = int(START.timestamp())
    graph = [(sha, root, [shas[i + 1]] if i < 5 else []) for i, sha in reversed(list(enumerate(shas)))]
    with write_connection(engine) as conn:
        assert store_graph(conn, "", graph) == 6
    with Session(engine) as session:
        [series] = branch_histories(session, "main", with_ratios=False)
    assert [p.sha for p in series.points] == shas[::-1]
    with engine.connect() as conn:
        [latest] = queries.latest_verdicts(conn, branch="main")
    assert (latest["commit_sha"], latest["status"]) == (shas[0], "error")
    engine.dispose()


def test_parents_must_come_first():
    with pytest.raises(IngestError, match="send parents first"):
        graph_order([("bb", 0, ["aa"]), ("aa", 0, [])], {})
    places = graph_order([("aa", 100, []), ("bb", 50, ["aa"])], {})
    assert places["bb"] > places["aa"]


def test_find_cycle_names_the_commits_of_a_cycle_and_nothing_else():
    assert find_cycle({"c": ["b"], "b": ["a"], "a": []}) == []
    assert find_cycle({"m": ["a", "b"], "a": ["r"], "b": ["r"], "r": []}) == []  # a merge is no cycle
    cycle = find_cycle({"x": ["a"], "a": ["b"], "b": ["c"], "c": ["a"]})
    assert cycle[0] == cycle[-1] and set(cycle) == {"a", "b", "c"}
    assert find_cycle({"s": ["s"]}) == ["s", "s"]


def test_stored_commits_keep_their_upload_dates_under_the_graph():
    places = graph_order(
        [("aa", 0, []), ("bb", 4_000_000_000, ["aa"])],
        {},
        {"aa": datetime(2026, 1, 2, tzinfo=UTC)},
    )
    assert places["aa"] == datetime(2026, 1, 2, tzinfo=UTC)
    assert places["bb"] == datetime.fromtimestamp(4_000_000_000, UTC)

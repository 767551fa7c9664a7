"""The read layer the API and the pages share (store/*_reads.py): typed rows, never ORM entities, and the
same answer on both sides. Two runs of branch q and a newer pull-request run, uploaded in process; and a
series history whose commit dates, graph order and run starts disagree, in a store of its own."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from datetime import datetime

import pytest
from sqlalchemy import Connection
from sqlalchemy.orm import Session

from tests.conftest import InProcessApp, app_in_process
from tests.uploads import parts_of, post_run, tiny_run
from tewatch.store.engine.database import make_engine
from tewatch.store.reads.alert_queries import CLOSED_STATES, LIVE_STATES
from tewatch.store.reads.case_reads import (
    FAILING_VERDICTS,
    CaseSelection,
    case_series,
    case_verdicts,
    latest_case_verdicts,
    primary_series,
    verdict_rows,
)
from tewatch.store.reads.detection_reads import alert_counts, alert_rows, perf_signals, pr_verdicts
from tewatch.store.reads.filter_options import filter_options
from tewatch.store.reads.machine_reads import machine_environments, machine_runs, machines
from tewatch.store.reads.run_reads import (
    result_count,
    run_filters,
    run_row,
    run_rows,
    run_verdicts,
    verdict_counts,
)
from tewatch.store.reads.series_reads import (
    DETAIL_COLUMNS,
    EXACT_BELOW,
    DetailedPoint,
    detailed_points,
    sample_view,
    series_header,
    series_points,
    series_version,
    thinned,
)
from tewatch.store.reads.store_state import store_state
from tewatch.store.reads.table_rows import TABLES, CommitFacts, EnvironmentFacts, MachineFacts, RunFacts
from tewatch.store.schema.models import Base


@pytest.fixture(scope="module")
def uploaded(in_process_app):
    with in_process_app.client() as client:
        ids = [
            post_run(client, parts_of(tiny_run(i)), branch="q", repo="acme/te").json()["run_id"]
            for i in (0, 1)
        ]
        pr = post_run(client, parts_of(tiny_run(1)), branch="feature", pr_number="42", merge_base_sha="abc")
    return ids, pr.json()["run_id"]


@pytest.fixture()
def conn(in_process_app, uploaded):
    engine = make_engine(in_process_app.db_url)
    try:
        with engine.connect() as connection:
            yield connection
    finally:
        engine.dispose()


def no_entities(row: object) -> None:
    """A typed row holds plain values and typed rows, never an ORM entity."""
    for f in dataclasses.fields(row):  # type: ignore[arg-type]
        value = getattr(row, f.name)
        assert not isinstance(value, Base), f.name
        if dataclasses.is_dataclass(value):
            no_entities(value)


def test_every_typed_row_has_its_tables_columns() -> None:
    for row_type, table in TABLES.items():
        assert [f.name for f in dataclasses.fields(row_type)] == [c.key for c in table.columns], row_type


def test_a_detailed_point_has_its_columns() -> None:
    fields = [f.name for f in dataclasses.fields(DetailedPoint)]
    assert fields == [*(c.key for c in DETAIL_COLUMNS), "samples", "sample_count"]


def test_the_api_lists_the_runs_the_pages_list(in_process_app, uploaded, conn: Connection) -> None:
    (base, head), pr_run = uploaded
    listed = run_rows(conn)
    assert [r.run.id for r in listed.rows] == [pr_run, head, base] and listed.total == 3
    for row in listed.rows:
        no_entities(row)
        assert (type(row.run), type(row.commit), type(row.machine), type(row.environment)) == (
            RunFacts,
            CommitFacts,
            MachineFacts,
            EnvironmentFacts,
        )
    with in_process_app.client(token=None) as client:
        api = client.get("/api/v1/runs").json()
        assert [r["id"] for r in api["items"]] == [r.run.id for r in listed.rows]
        assert api["total"] == listed.total
        first = api["items"][0]
        assert (first["commit_sha"], first["machine_name"], first["te_version"]) == (
            listed.rows[0].commit.sha,
            listed.rows[0].machine.name,
            listed.rows[0].environment.te_version or None,  # a run without TE answers null, not ""
        )
        detail = client.get(f"/api/v1/runs/{base}").json()
    found = run_row(conn, base)
    assert found is not None and detail["machine"] == dataclasses.asdict(found.machine)
    assert detail["environment"] == dataclasses.asdict(found.environment)
    assert run_row(conn, 999_999) is None


def test_runs_filter_by_repository_gpu_and_pull_request(uploaded, conn: Connection) -> None:
    (base, head), pr_run = uploaded
    assert [r.run.id for r in run_rows(conn, run_filters(repo="acme/te")).rows] == [head, base]
    assert run_rows(conn, run_filters(gpu="NVIDIA H200")).total == 0
    assert run_rows(conn, run_filters(gpu="cpu")).total == 3
    assert [r.run.id for r in run_rows(conn, run_filters(pr_number=42)).rows] == [pr_run]
    one = run_rows(conn, run_filters(branch="q"), limit=1, offset=1)
    assert [r.run.id for r in one.rows] == [base] and one.total == 2


def test_a_runs_counts_and_verdicts(uploaded, conn: Connection) -> None:
    (base, _head), _pr = uploaded
    row = run_row(conn, base)
    assert row is not None
    counts = verdict_counts(conn, [row.run])[base]
    assert counts == row.run.summary["verdicts"] and sum(counts.values()) == 8
    unsummed = dataclasses.replace(row.run, summary={})  # a run stored before ingest wrote summaries
    assert verdict_counts(conn, [unsummed])[base] == counts
    assert result_count(conn, row.run) == result_count(conn, unsummed) == 14
    failing = run_verdicts(conn, base, FAILING_VERDICTS)
    others = run_verdicts(conn, base, FAILING_VERDICTS, among=False)
    assert len(failing) + len(others) == 8
    assert all(v.verdict.status in FAILING_VERDICTS for v in failing)
    assert not any(v.verdict.status in FAILING_VERDICTS for v in others)
    assert [(v.case.case_name, v.case.id) for v in failing] == sorted(
        (v.case.case_name, v.case.id) for v in failing
    )
    for found in failing + others:
        no_entities(found)
        assert found.verdict.run_id == base and found.verdict.case_id == found.case.id
    assert len(run_verdicts(conn, base, FAILING_VERDICTS, among=False, limit=1)) == min(1, len(others))


def test_the_api_lists_the_machines_the_page_lists(in_process_app, uploaded, conn: Connection) -> None:
    (_base, head), pr_run = uploaded
    found = machines(conn)
    with in_process_app.client(token=None) as client:
        assert client.get("/api/v1/machines").json() == [dataclasses.asdict(m) for m in found]
    [machine] = found
    runs = machine_runs(conn)[machine.id]
    assert runs.runs == 3 and runs.last_run_id in (head, pr_run)
    assert [e.id for e in machine_environments(conn)[machine.id]] == sorted(
        {e.id for e in machine_environments(conn)[machine.id]}
    )


def test_the_api_and_the_pages_agree_on_latest_verdicts(in_process_app, uploaded, conn: Connection) -> None:
    (_base, head), pr_run = uploaded
    with in_process_app.client(token=None) as client:
        for branch in (None, "q", "feature"):
            params = {"branch": branch} if branch else {}
            api = client.get("/api/v1/verdicts/latest", params=params).json()
            heads = latest_case_verdicts(conn, CaseSelection(), branch)
            with_verdict = [h for h in heads if h.verdict is not None]
            rows = verdict_rows(conn, [h.verdict.id for h in with_verdict if h.verdict])
            assert {(v["case_id"], v["run_id"], v["status"]) for v in api} == {
                (h.case.id, rows[h.verdict.id].run_id, h.verdict.status.value)
                for h in with_verdict
                if h.verdict
            }
            # with no branch chosen the pull request's newer run is passed over
            assert {rows[h.verdict.id].run_id for h in with_verdict if h.verdict} == (
                {pr_run} if branch == "feature" else {head}
            )
    assert heads == sorted(heads, key=lambda h: h.case.id)
    by_name = latest_case_verdicts(conn, CaseSelection(), by_name=True)
    assert [h.case.id for h in by_name] == [
        h.case.id for h in sorted(by_name, key=lambda h: (h.case.case_name, h.case.id))
    ]
    [one] = latest_case_verdicts(conn, CaseSelection(case_id=heads[0].case.id), "q")
    assert one.case == heads[0].case
    assert latest_case_verdicts(conn, CaseSelection(gpu="NVIDIA H200")) == []


def test_a_cases_series_history_and_primary_series(uploaded, conn: Connection) -> None:
    (base, head), pr_run = uploaded
    heads = latest_case_verdicts(conn, CaseSelection(), "q")
    case_ids = [h.case.id for h in heads]
    primaries = primary_series(conn, case_ids)
    assert primaries
    case_id, primary = next(iter(primaries.items()))
    summaries = case_series(conn, case_id, "q")
    assert primary.series_id in {s.series_id for s in summaries}
    assert summaries[0].series_id == primary.series_id
    history = case_verdicts(conn, case_id, limit=10)
    assert [v.run_id for v in history] == sorted({v.run_id for v in history}, reverse=True)
    assert {v.run_id for v in history} <= {base, head, pr_run}
    outside = case_verdicts(conn, case_id, limit=10, branch="", every_run=False)
    assert pr_run not in {v.run_id for v in outside}
    for v in history:
        no_entities(v)
        assert v.at == (v.started_at or v.uploaded_at)


def test_series_points_along_the_commit_axis(uploaded, conn: Connection) -> None:
    (base, head), pr_run = uploaded
    [primary] = primary_series(conn, [latest_case_verdicts(conn, CaseSelection(), "q")[0].case.id]).values()
    header = series_header(conn, primary.series_id)
    assert header is not None and series_header(conn, 999_999) is None
    for with_samples in (True, False):
        points = series_points(conn, header, "q", with_samples=with_samples)
        assert [p.run_id for p in points] == [base, head]
        assert series_version(conn, header.series_id, "q") == (2, head)
    assert [p.run_id for p in series_points(conn, header, "q", last=1)] == [head]
    assert [p.run_id for p in series_points(conn, header, pr=42)] == [pr_run]
    assert series_version(conn, header.series_id, pr=42) == (1, pr_run)


def test_a_page_of_detailed_points_ends_at_its_sample_budget(uploaded, conn: Connection) -> None:
    (base, head), _ = uploaded
    case_ids = [h.case.id for h in latest_case_verdicts(conn, CaseSelection(), "q")]
    headers = [series_header(conn, s.series_id) for s in primary_series(conn, case_ids).values()]
    header, whole = next(
        (h, page)
        for h in headers
        if h is not None
        and (page := detailed_points(conn, h.series_id, h.case_id, "q")).points
        and (page.points[-1].sample_count or 0) > 3
    )
    assert [p.run_id for p in whole.points] == [base, head] and whole.next_offset is None
    stored = whole.points[-1].sample_count
    assert stored and stored > 3 and stored == len(whole.points[-1].samples or [])
    # the newest point is always given, its samples thinned; the older one waits for the next page
    page = detailed_points(conn, header.series_id, header.case_id, "q", samples_per_point=3, sample_budget=4)
    assert [p.run_id for p in page.points] == [head] and page.next_offset == 1
    assert len(page.points[0].samples or []) == 3 and page.points[0].sample_count == stored
    rest = detailed_points(conn, header.series_id, header.case_id, "q", skip=1, sample_budget=4)
    assert [p.run_id for p in rest.points] == [base] and rest.next_offset is None
    bare = detailed_points(conn, header.series_id, header.case_id, "q", with_samples=False, last=1)
    assert bare.points[0].samples is None and bare.points[0].sample_count is None and bare.next_offset == 1


def test_thinned_samples_keep_the_ends_evenly_spaced() -> None:
    assert thinned(list(range(10)), 20) == list(range(10))
    assert thinned(list(range(101)), 5) == [0, 25, 50, 75, 100]
    assert thinned(list(range(10)), 1) == [0] and thinned(list(range(10)), 0) == []


def test_the_alerts_page_reads_the_apis_alerts(in_process_app, uploaded, conn: Connection) -> None:
    with in_process_app.client(token=None) as client:
        api = client.get("/api/v1/alerts").json()
    assert api and alert_counts(conn) == {"open": len(api)}
    engine = make_engine(in_process_app.db_url)
    try:
        with Session(engine) as session:
            live = alert_rows(session, LIVE_STATES)
            assert alert_rows(session, CLOSED_STATES) == []
    finally:
        engine.dispose()
    assert [row.alert.id for row in live] == [a["id"] for a in api]
    for row in live:
        no_entities(row)
        assert row.alert.status.value == "open" and [c.to_status for c in row.changes] == ["open"]
        assert row.case_name is not None


def test_detection_reads_and_filter_options(uploaded, conn: Connection) -> None:
    heads = latest_case_verdicts(conn, CaseSelection())
    assert perf_signals(conn, [h.case.id for h in heads]) == {}
    for verdict in pr_verdicts(conn, 42):
        no_entities(verdict)
        assert verdict.comparison.pr_number == 42
    options = filter_options(conn)
    assert options.branches == ["q"] and options.gpus == ["cpu"]
    assert len(store_state(conn)) == 6


def at(day: str, hour: int = 12) -> datetime:
    return datetime.fromisoformat(f"2026-{day}T{hour:02}:00:00+00:00")


def run_at(commit: str, started: datetime) -> dict:
    """The tiny run, filed under `commit` and started at `started`."""
    parts = parts_of(tiny_run(0))
    result = json.loads(parts["result"][0][1])
    run = json.loads(parts["run"][0][1])
    result["commit_hash"] = commit
    run["started_at"] = started.isoformat()
    parts["result"] = [(parts["result"][0][0], json.dumps(result).encode())]
    parts["run"] = [(parts["run"][0][0], json.dumps(run).encode())]
    return parts


# uploaded in this order: run ids follow neither commit dates nor commit order
HISTORY = {  # name: (commit, commit date, run start, upload fields)
    "b": ("b" * 40, at("01-05"), at("01-05"), {"branch": "main"}),
    "c": ("c" * 40, at("02-01"), at("02-01", 12), {"branch": "main"}),
    "d": ("d" * 40, at("02-01"), at("02-01", 11), {"branch": "main"}),  # same date as c, started first
    "a": ("a" * 40, at("01-10"), at("01-10"), {"branch": "main"}),
    "n": ("e" * 40, at("01-15"), at("01-15"), {"branch": "nightly"}),
    "p": (
        "f" * 40,
        at("01-20"),
        at("01-20"),
        {"branch": "feature", "pr_number": "7", "merge_base_sha": "a" * 40},
    ),
}
# b is a's child in the git graph, though dated before it
GRAPH = [["a" * 40, int(at("01-10").timestamp()), []], ["b" * 40, int(at("01-05").timestamp()), ["a" * 40]]]


@pytest.fixture()
def history(db_url) -> Iterator[tuple[InProcessApp, dict[str, int]]]:
    with app_in_process(db_url) as app, app.client() as client:
        ids = {}
        for name, (commit, committed, started, fields) in HISTORY.items():
            answer = post_run(
                client,
                run_at(commit, started),
                repo="acme/order",
                commit_date=committed.isoformat(),
                **fields,
            )
            assert answer.status_code == 201, answer.text
            ids[name] = answer.json()["run_id"]
        graph = client.post("/api/v1/commits/graph", json={"repo": "acme/order", "commits": GRAPH})
        assert graph.json()["placed"] == 2
        yield app, ids


def test_the_api_and_the_pages_give_a_series_the_same_points_in_commit_order(history) -> None:
    app, ids = history
    expected = {  # (API parameters, the pages' branch filter, pull request, tail): runs in commit order
        "history": ({}, "", None, None, "abndc"),
        "main": ({"branch": "main"}, "main", None, None, "abdc"),
        "pull request": ({"pr": 7}, "", 7, None, "p"),
        "tail": ({"limit": 3}, "", None, 3, "ndc"),
        "main's tail": ({"branch": "main", "limit": 2}, "main", None, 2, "dc"),
    }
    engine = make_engine(app.db_url)
    try:
        with engine.connect() as conn, app.client(token=None) as client:
            series_ids = [s["id"] for c in client.get("/api/v1/cases").json()["items"] for s in c["series"]]
            for series_id in series_ids:
                header = series_header(conn, series_id)
                assert header is not None
                for name, (params, branch, pr, last, runs) in expected.items():
                    api = client.get(f"/api/v1/series/{series_id}", params=params).json()["points"]
                    pages = series_points(conn, header, branch, last=last, pr=pr)
                    assert [p["run_id"] for p in api] == [ids[r] for r in runs], name
                    assert [
                        (
                            p["run_id"],
                            p["commit_sha"],
                            p["status"],
                            p["value"],
                            p["verdict"],
                            p["samples"] or [],
                        )
                        for p in api
                    ] == [(p.run_id, p.sha, p.status, p.value, p.verdict, p.samples) for p in pages], name
                    buckets = series_points(conn, header, branch, last=last, with_samples=False, pr=pr)
                    assert [p.run_id for p in buckets] == [p.run_id for p in pages], name
    finally:
        engine.dispose()


def test_a_long_stored_list_is_read_where_it_lies() -> None:
    values = [1e-4 + (i % 977) * 1e-8 for i in range(200_000)]
    text = json.dumps(values)
    assert len(text) > EXACT_BELOW
    picked, count = sample_view(text, 32)
    assert count == len(values) and len(picked or []) == 32
    assert picked and picked[0] == values[0] and picked[-1] == values[-1] and set(picked) <= set(values)
    short = json.dumps(values[:1000])
    assert sample_view(short, 10) == (thinned(values[:1000], 10), 1000)
    assert sample_view(None, 10) == (None, None) and sample_view("null", 10) == (None, None)
    assert sample_view(json.dumps([1.5, None, 2.5]), 10) == ([1.5, 2.5], 2)

"""A case's kernel tables through the upload API, `GET /api/v1/cases/{id}/kernels` and the case page, in
process: a CPU case's record of the tiny suite with the `kernels` block the CPU suites write (top-level
aten operators, docs/kernels.md); a block the store cannot keep is a 422 that names the record."""

from __future__ import annotations

import json

import pytest

from tests.uploads import parts_of, post_run, tiny_run

RECORD = "ops.Scale-17287eacbe18.json"  # ops.Scale, torch-ref, rank 2
ATEN = [
    {"name": "aten::mul", "calls_per_call": 2.0, "total_seconds": 3.0e-5, "mean_seconds": 1.5e-5},
    {"name": "aten::copy_", "calls_per_call": 1.0, "total_seconds": 1.0e-5, "mean_seconds": 1.0e-5},
]


# the metrics the suites write beside the block (docs/kernels.md): series of their own, lower is better
HOST_METRICS = {
    "cpu_seconds": {"value": 4.1e-5, "unit": "seconds"},
    "launches_per_call": {"value": 0.0, "unit": "count"},
    "syncs_per_call": {"value": 0.0, "unit": "count"},
    "copies_per_call": {"value": 0.0, "unit": "count"},
    "graph_breaks": {"value": 1.0, "unit": "count"},
}


def with_kernels(block: dict | None, run: int = 0) -> dict:
    parts = parts_of(tiny_run(run))
    cases = []
    for name, content in parts["cases"]:
        if name == RECORD and block is not None:
            record = json.loads(content)
            record["metrics"] = {**record.get("metrics", {}), **HOST_METRICS}
            content = json.dumps({**record, "kernels": block}).encode()
        cases.append((name, content))
    parts["cases"] = cases
    return parts


BLOCK = {
    "device": "cpu",
    "profiled_calls": 20,
    "table": ATEN,
    "launches_per_call": 0.0,
    "syncs_per_call": 0.0,
    "copies_per_call": 0.0,
}


@pytest.fixture(scope="module")
def stored(in_process_app):
    with in_process_app.client() as client:
        first = post_run(client, with_kernels(BLOCK, 0), branch="main").json()["run_id"]
        block = {**BLOCK, "table": [*ATEN, {**ATEN[0], "name": "aten::add"}]}
        second = post_run(client, with_kernels(block, 1), branch="main").json()["run_id"]
        cases = client.get("/api/v1/cases", params={"case": "ops.Scale"}).json()["items"]
    case_id = next(c["id"] for c in cases if c["params"] == {"backend": "torch-ref", "rank": 2})
    return in_process_app, case_id, first, second


def test_a_cases_kernel_tables_newest_run_first(stored):
    app, case_id, first, second = stored
    with app.client(token=None) as client:
        page = client.get(f"/api/v1/cases/{case_id}/kernels").json()
        assert page["total"] == 2 and [t["run_id"] for t in page["items"]] == [second, first]
        newest = page["items"][0]
        assert newest["device"] == "cpu" and newest["profiled_calls"] == 20 and newest["branch"] == "main"
        assert [k["name"] for k in newest["kernels"]] == ["aten::mul", "aten::copy_", "aten::add"]
        assert newest["kernels"][0] == ATEN[0] and newest["launches_per_call"] == 0.0
        one = client.get(f"/api/v1/cases/{case_id}/kernels", params={"limit": 1, "offset": 1}).json()
        assert [t["run_id"] for t in one["items"]] == [first] and one["total"] == 2


def test_the_host_and_compile_counts_are_series_where_lower_is_better(stored):
    app, case_id, _, second = stored
    with app.client(token=None) as client:
        benchmarks = {
            b["name"]: b for b in client.get("/api/v1/benchmarks", params={"case": "ops.Scale"}).json()
        }
        for metric, expected in HOST_METRICS.items():
            found = benchmarks[f"ops.Scale.{metric}"]
            assert (found["unit"], found["higher_is_better"]) == (expected["unit"], False), metric
        results = client.get(f"/api/v1/runs/{second}/results", params={"limit": 1000}).json()["items"]
    mine = {r["benchmark"]: r["value"] for r in results if r["case_id"] == case_id}
    assert mine["ops.Scale.cpu_seconds"] == 4.1e-5 and mine["ops.Scale.graph_breaks"] == 1.0


def test_unknown_cases_and_unbounded_pages_are_refused(stored):
    app, case_id, _, _ = stored
    with app.client(token=None) as client:
        assert client.get("/api/v1/cases/99999/kernels").status_code == 404
        assert client.get(f"/api/v1/cases/{case_id}/kernels", params={"limit": 101}).status_code == 422
        assert client.get(f"/api/v1/cases/{case_id}/kernels", params={"limit": 0}).status_code == 422
        assert client.get("/api/v1/cases/99999999999/kernels").status_code == 422


def test_the_case_page_shows_the_newest_kernel_table(stored):
    app, case_id, _, second = stored
    with app.client(token=None) as client:
        page = client.get(f"/case/{case_id}").text
    assert 'id="kernel-table"' in page and f'href="/runs/{second}">#{second}</a>' in page
    assert "aten::mul" in page and "aten::add" in page and "top-level aten operators on CPU" in page
    assert "42.9 %" in page  # aten::mul: 30 us of 70 us


@pytest.mark.parametrize(
    ("block", "field"),
    [
        ({**BLOCK, "table": [{**ATEN[0], "name": f"k{i}"} for i in range(501)]}, "kernels.table"),
        ({**BLOCK, "table": [ATEN[0], ATEN[0]]}, "kernels.table"),
        ({**BLOCK, "device": "tpu"}, "kernels.device"),
        ({**BLOCK, "profiled_calls": 0}, "kernels.profiled_calls"),
        ({**BLOCK, "syncs_per_call": -1.0}, "kernels.syncs_per_call"),
        ({**BLOCK, "table": [{**ATEN[0], "name": "x" * 1001}]}, "kernels.table.0.name"),
        ({**BLOCK, "table": [{**ATEN[0], "name": "bad\u0000name"}]}, "kernels.table[0].name"),
        ({**BLOCK, "extra": 1}, "kernels.extra"),
    ],
)
def test_a_kernel_block_the_store_cannot_keep_is_a_422_naming_the_record(in_process_app, block, field):
    with in_process_app.client() as client:
        answer = post_run(client, with_kernels(block, 0), branch="refused")
    assert answer.status_code == 422, answer.text
    error = answer.json()
    assert RECORD.removesuffix(".json") in error["file"] and error["field"] == field, error

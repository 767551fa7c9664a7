"""store.case_metric_reads on SQLite and PostgreSQL: a case's byte and error values with the run before,
and the checks its verdicts held to a tolerance, from the kept H200 memory campaign's base and head uploaded
on main (the head's commit dated an hour later)."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import select

from tests.conftest import FIXTURES
from tests.uploads import parts_of, post_run
from tewatch.ingest.discover import find_runs
from tewatch.store.engine.database import make_engine
from tewatch.store.reads.case_metric_reads import CheckedValue, _checked, case_metric_values, run_checks
from tewatch.store.schema.models import Case

CAMPAIGN = FIXTURES / "h200-memnum-ab"
MIB = 2**20


def upload(client, arm: str, hour: int, **fields: str) -> int:
    (run,) = find_runs(CAMPAIGN / f"{arm}-results")
    parts = parts_of(run)
    name, content = parts["result"][0]
    result = json.loads(content)
    result["date"] += hour * 3600 * 1000
    parts["result"] = [(name, json.dumps(result).encode())]
    answer = post_run(client, parts, **fields)
    assert answer.status_code in (200, 201), answer.text
    return answer.json()["run_id"]


@pytest.fixture(scope="module")
def stored(in_process_app):
    with in_process_app.client() as client:
        base = upload(client, "base", 0, branch="main")
        head = upload(client, "head", 1, branch="main")
    engine = make_engine(in_process_app.db_url)
    try:
        with engine.connect() as conn:
            cases = {
                (name, (labels or {}).get("recipe"), (labels or {}).get("mode")): case_id
                for case_id, name, labels in conn.execute(select(Case.id, Case.case_name, Case.labels))
            }
        yield engine, cases, base, head
    finally:
        engine.dispose()


def test_byte_values_come_with_the_run_before(stored):
    engine, cases, base, head = stored
    gemm = cases[("gemm.Gemm", "fp8-current", None)]
    with engine.connect() as conn:
        found = {v.metric: v for v in case_metric_values(conn, gemm, ("bytes",), "main")}
        only_base = {v.metric: v for v in case_metric_values(conn, gemm, ("bytes",), "nothing-here")}
    assert set(found) == {"setup_allocated_bytes", "peak_allocated_bytes", "peak_reserved_bytes"}
    setup = found["setup_allocated_bytes"]
    assert (setup.latest_run_id, setup.previous_run_id) == (head, base)
    assert setup.change == 64 * MIB and setup.share == pytest.approx(64 * MIB / setup.previous)
    assert all(v.latest is None and v.change is None for v in only_base.values())


def test_error_values_and_the_tolerances_their_checks_held(stored):
    engine, cases, base, head = stored
    linear = cases[("linear.LinearFwdBwd", "fp8-current", "eager")]
    with engine.connect() as conn:
        errors = {v.metric: v for v in case_metric_values(conn, linear, ("rel error",), "main")}
        checks = run_checks(conn, linear, [base, head, 10**9])
    output = errors["output_vs_fp32_rel_l2"]
    assert output.latest == pytest.approx(0.04267226028325417) and output.previous == pytest.approx(
        0.0375239943751681
    )
    assert set(checks) == {base, head}
    assert [(c.check, c.metric, c.tolerance) for c in checks[head]] == [
        ("vs_fp32", "rel_l2", 0.1),
        ("dgrad_vs_fp32", "rel_l2", 0.1),
        ("wgrad_vs_fp32", "rel_l2", 0.1),
    ]
    assert checks[head][0].value == output.latest


@pytest.mark.parametrize(
    "entry",
    [
        None,
        [],
        {"metric": "rel_l2", "value": 0.1},
        {"metric": "rel_l2", "value": "0.1", "tolerance": 0.2},
        {"metric": "rel_l2", "value": True, "tolerance": 0.2},
        {"metric": 3, "value": 0.1, "tolerance": 0.2},
        {"metric": "rel_l2", "value": float("nan"), "tolerance": 0.2},
        {"metric": "rel_l2", "value": 0.1, "tolerance": float("inf")},
    ],
)
def test_a_check_without_a_finite_value_and_tolerance_holds_nothing(entry):
    assert _checked(entry) is None


def test_a_check_with_both_is_read_as_numbers():
    assert _checked({"check": "x", "metric": "rel_l2", "value": 1, "tolerance": 0.5}) == CheckedValue(
        "x", "rel_l2", 1.0, 0.5
    )

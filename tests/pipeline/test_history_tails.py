"""The newest values of many series at once (tewatch.pipeline.history.latest_values), the noise history
of a pull-request comparison, against a real store."""

from __future__ import annotations

from sqlalchemy import insert
from sqlalchemy.orm import Session

from tests.detect.store_history import h200, te_environment
from tewatch.pipeline.history import TAIL_QUERY_SERIES, latest_values
from tewatch.store.engine.database import make_engine
from tewatch.store.schema.models import Benchmark, Case, Commit, Result, ResultStatus, Run, Series

SERIES = TAIL_QUERY_SERIES + 7  # two statements, the second one short
RUNS = 30


def _value(run: int, series: int) -> float:
    return 1.0 + run + series / 1000


def test_each_series_gives_its_newest_ok_positive_values_outside_pull_requests_oldest_first(db_url):
    engine = make_engine(db_url)
    pr_runs = {5, 17, 28}
    with Session(engine) as session, session.begin():
        machine, environment = h200(), te_environment()
        benchmark = Benchmark(name="gemm.Gemm.time", case_name="gemm.Gemm", unit="seconds")
        series = [
            Series(
                fingerprint=f"s{i}",
                benchmark=benchmark,
                case=Case(fingerprint=f"c{i}", case_name="gemm.Gemm", params={"m": i}, gpu_model="H200"),
            )
            for i in range(SERIES)
        ]
        runs = [
            Run(
                digest=f"r{i}",
                machine=machine,
                environment=environment,
                commit=Commit(sha=f"{i:040x}"),
                pr_number=7 if i in pr_runs else None,
            )
            for i in range(RUNS)
        ]
        session.add_all([*series, *runs])
        session.flush()
        rows, expected = [], {}
        for s_index, s in enumerate(series):
            kept = []
            for r_index, run in enumerate(runs):
                failed = (r_index + s_index) % 11 == 0
                value = 0.0 if (r_index + s_index) % 13 == 0 else _value(r_index, s_index)
                status = ResultStatus.failed if failed else ResultStatus.ok
                rows.append({"run_id": run.id, "series_id": s.id, "status": status, "value": value})
                if not failed and value > 0 and r_index not in pr_runs:
                    kept.append(value)
            expected[s.id] = kept[-10:]
        session.execute(insert(Result), rows)
        series_ids = [s.id for s in series]
    with Session(engine) as session:
        found = latest_values(session, series_ids, 10)
    engine.dispose()
    assert found == expected
    assert all(len(values) == 10 for values in found.values())

"""A change point on a branch's memory series opens a regression alert as a timing's does, one on an error
metric a `numerics` alert (SQLite and PostgreSQL): one value per run, as the suites record them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from tewatch.pipeline.branch_detection import detect_branch
from tewatch.store.engine.database import make_engine
from tewatch.store.schema.alert_models import Alert, AlertKind
from tewatch.store.schema.models import (
    Benchmark,
    Case,
    Commit,
    Environment,
    Machine,
    Result,
    ResultStatus,
    Run,
    Series,
)

START = datetime(2026, 11, 1, tzinfo=UTC)
MIB = 2**20


@pytest.fixture
def engine(db_url):
    engine = make_engine(db_url)
    yield engine
    engine.dispose()


def store_history(engine, values: dict[tuple[str, str], list[float]]) -> None:
    """A run per commit on `main`, each with one value of every series (`(metric, unit)` -> values)."""
    with Session(engine) as session, session.begin():
        machine = Machine(
            digest="m",
            name="h200",
            gpu_model="NVIDIA H200",
            compute_capability="9.0",
            driver="580",
            cuda="13.0",
        )
        environment = Environment(digest="env", torch="2.11.0", te_version="2.20.2")
        case = Case(
            fingerprint="case-gemm",
            case_name="gemm.Gemm",
            params={"recipe": "fp8-current"},
            gpu_model="NVIDIA H200",
            compute_capability="9.0",
        )
        series = {
            key: Series(
                fingerprint=f"series-{key[0]}",
                case=case,
                benchmark=Benchmark(
                    name=f"gemm.Gemm.{key[0]}",
                    case_name="gemm.Gemm",
                    unit=key[1],
                    type="metric",
                    higher_is_better=key[1] == "dB",  # as ingest sets it (docs/records.md)
                ),
            )
            for key in values
        }
        session.add_all([machine, environment, *series.values()])
        session.flush()
        for i in range(len(next(iter(values.values())))):
            commit = Commit(sha=f"{i:040x}", branch="main", committed_at=START + timedelta(hours=i))
            run = Run(
                digest=f"run-{i}",
                machine=machine,
                environment=environment,
                commit=commit,
                branch="main",
                started_at=START + timedelta(hours=i),
            )
            session.add(run)
            session.flush()
            session.add_all(
                Result(run_id=run.id, series_id=series[key].id, status=ResultStatus.ok, value=found[i])
                for key, found in values.items()
            )


def test_a_memory_step_opens_a_regression_alert_and_an_error_step_a_numerics_alert(engine) -> None:
    store_history(
        engine,
        {
            ("setup_allocated_bytes", "bytes"): [224 * MIB] * 30 + [288 * MIB] * 15,
            ("output_vs_fp32_rel_l2", "rel error"): [0.0376] * 30 + [0.0425] * 15,
            ("peak_reserved_bytes", "bytes"): [4354 * MIB] * 45,
        },
    )
    detect_branch(engine, "main", "https://tewatch.example")
    with Session(engine) as session:
        found = {
            alert.title.split(" ")[0].split("(")[0]: alert.kind
            for alert in session.scalars(select(Alert).order_by(Alert.id))
        }
    assert found == {
        "gemm.Gemm.setup_allocated_bytes": AlertKind.regression,
        "gemm.Gemm.output_vs_fp32_rel_l2": AlertKind.numerics,
    }


def test_an_error_metric_that_gets_better_opens_no_alert(engine) -> None:
    store_history(engine, {("output_vs_fp32_sqnr_db", "dB"): [28.0] * 30 + [30.0] * 15})
    detect_branch(engine, "main", "https://tewatch.example")
    with Session(engine) as session:
        assert session.scalars(select(Alert)).all() == []

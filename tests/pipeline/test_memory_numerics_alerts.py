"""A change point on a branch's memory series opens a regression alert as a timing's does, one on an error
metric a `numerics` alert (SQLite and PostgreSQL): one value per run, as the suites record them."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from tests.detect.store_history import add_run, gemm_case, h200, main_commit, te_environment
from tewatch.pipeline.branch_detection import detect_branch
from tewatch.store.schema.alert_models import Alert, AlertKind
from tewatch.store.schema.models import Benchmark, Series

MIB = 2**20


def store_history(engine, values: dict[tuple[str, str], list[float]]) -> None:
    """A run per commit on `main`, each with one value of every series (`(metric, unit)` -> values)."""
    with Session(engine) as session, session.begin():
        machine, environment = h200(driver="580"), te_environment()
        case = gemm_case(params={"recipe": "fp8-current"})
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
            add_run(
                session,
                machine,
                environment,
                main_commit(session, f"{i:040x}", i),
                i,
                {series[key].id: found[i] for key, found in values.items()},
                digest=f"run-{i}",
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

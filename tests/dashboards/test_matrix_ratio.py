"""The compile-vs-eager grid's ratio: a compiled case that timed eager in its own process (`over_eager`)
shows that ratio; one without falls back to the two cases' latest values."""

from __future__ import annotations

import json

from sqlalchemy.orm import Session

from tests.conftest import FIXTURES
from tests.uploads import parts_of
from tewatch.ingest.bundle import UploadBundle
from tewatch.ingest.discover import find_runs
from tewatch.ingest.service import ingest_bundle
from tewatch.store.engine.database import make_engine
from tewatch_dashboards.views.filters import Filters
from tewatch_dashboards.views.matrix import matrix_grids

MEASURED = {"recipe": "fp8-current", "rank": 3, "mode": "default"}


def _bundle_with_an_in_process_ratio() -> UploadBundle:
    [run] = find_runs(FIXTURES / "h200-ab-rounds" / "base-results")
    parts = parts_of(run)
    cases = []
    for name, content in parts["cases"]:
        record = json.loads(content)
        if record["case"] == "linear.LinearFwdBwd" and record["params"] == MEASURED:
            record["metrics"]["over_eager"] = {"value": 0.5, "unit": "ratio"}
        cases.append((name, json.dumps(record).encode()))
    single = {part: entries[0][1] for part, entries in parts.items() if part != "cases"}
    return UploadBundle(**single, cases=cases, branch="main")


def test_the_ratio_measured_in_one_process_wins_over_two_cases_latest_values(db_url) -> None:
    engine = make_engine(db_url)
    try:
        ingest_bundle(engine, _bundle_with_an_in_process_ratio())
        with Session(engine) as session:
            [grid] = [
                m
                for m in matrix_grids(session.connection(), Filters())
                if m.gpu_model == "NVIDIA H200" and not m.world_size
            ]
        [row] = [r for r in grid.rows if r.recipe == "fp8-current" and r.backend == "te"]
        assert row.cells[(3, "default")].ratio == 0.5
        compiled, eager = row.cells[(2, "default")], row.cells[(2, "eager")]
        assert compiled.ratio == compiled.row.latest_value / eager.row.latest_value
    finally:
        engine.dispose()


def test_the_general_checks_of_a_recipe_sit_in_its_row_and_compile_sequences_stay_out() -> None:
    from tewatch_dashboards.views.matrix import matrix_column

    for op in ("cpu_ops", "determinism", "nd_update", "dcp_round_trip", "fsdp_dcp_round_trip"):
        assert matrix_column(None, None, {"op": op}) == (0, op)
    # labels of benchmarks/checks.py: odd shapes carry a shape, compile sequences no mode or rank
    assert matrix_column(None, 2, {"op": "odd_shape"}) is None
    assert matrix_column(None, None, {"op": "linear_compile_sequence", "compile_mode": "default"}) is None

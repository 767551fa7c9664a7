"""Kernel tables through ingest, the store and detection (SQLite and PostgreSQL), on the kept H200 A/B
rounds (tests/fixtures/h200-ab-rounds) with kernel tables added to two of their case records as the suites
write them (docs/kernels.md): the FP8 current-scaling quantize case whose head runs an extra pass, and a
compiled te.Linear case whose head adds a graph break and compiles slower in both rounds."""

from __future__ import annotations

import html
import json
import re
import shutil
import statistics
from pathlib import Path

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from tests.conftest import FIXTURES, app_in_process
from tests.uploads import bundle_of
from tewatch.ingest.discover import find_runs
from tewatch.ingest.errors import IngestError
from tewatch.ingest.service import ingest_bundle
from tewatch.pipeline.detection import detect_after_upload
from tewatch.pipeline.pr_report import stored_pr_report
from tewatch.store.engine.database import make_engine
from tewatch.store.reads.kernel_reads import case_kernel_runs
from tewatch.store.schema.alert_models import Alert, AlertKind
from tewatch.store.schema.models import Case, Run

KEPT = FIXTURES / "h200-ab-rounds"
QUANTIZE = "quantize.Quantize-63f2ab6b96b2"  # te, 4x2048x5120, fp8-current: the head's extra pass
LINEAR = "linear.LinearFwdBwd-0253b54d8824"  # fp8-delayed, rank 3, compiled with the default mode
CAST = "transformer_engine::detail::cast_transpose_kernel<nvte_fp8e4m3>"
AMAX = "transformer_engine::detail::amax_kernel<float>"
EXTRA = "at::native::vectorized_elementwise_kernel<at::native::MulFunctor<float>>"
URL = "http://tw.example"


def _record(folder: Path, name: str) -> tuple[Path, dict]:
    [path] = folder.glob(f"vm-h200/*.tewatch/cases/{name}.json")
    return path, json.loads(path.read_text())


def _kernel_median(record: dict) -> float:
    return statistics.median(record["metrics"]["kernel_seconds"]["samples"])


def _add_kernels(folder: Path, extra_pass: bool, graph_breaks: float, compile_rounds: list[float]) -> None:
    """The quantize case's kernels summing to its measured kernel time: the base's split 70/30 between
    the cast and the amax kernels, which the head runs as long, its extra pass a kernel of its own taking
    the rest; the te.Linear case's graph breaks and its compile time in each round."""
    path, record = _record(folder, QUANTIZE)
    base = _kernel_median(_record(KEPT / "base-results", QUANTIZE)[1])
    table = [
        {"name": CAST, "calls_per_call": 1.0, "total_seconds": 0.7 * base, "mean_seconds": 0.7 * base},
        {"name": AMAX, "calls_per_call": 1.0, "total_seconds": 0.3 * base, "mean_seconds": 0.3 * base},
    ]
    if extra_pass:
        rest = _kernel_median(record) - base
        table.insert(0, {"name": EXTRA, "calls_per_call": 1.0, "total_seconds": rest, "mean_seconds": rest})
    record["kernels"] = {
        "device": "cuda",
        "profiled_calls": 20,
        "table": table,
        "launches_per_call": float(len(table) + 1),
        "syncs_per_call": 0.0,
        "copies_per_call": 0.0,
    }
    path.write_text(json.dumps(record))
    path, record = _record(folder, LINEAR)
    record["metrics"]["graph_breaks"]["value"] = graph_breaks
    record["metrics"]["compile_seconds"]["value"] = compile_rounds[0]
    record["round_values"] = {"compile_seconds": compile_rounds}
    path.write_text(json.dumps(record))


@pytest.fixture
def stored(db_url, tmp_path):
    """(engine, base run id, head run id): the edited base on main, the edited head as pull request 1."""
    base, head = tmp_path / "base", tmp_path / "head"
    shutil.copytree(KEPT / "base-results", base)
    shutil.copytree(KEPT / "head-results", head)
    _add_kernels(base, extra_pass=False, graph_breaks=2.0, compile_rounds=[1.62, 1.60])
    _add_kernels(head, extra_pass=True, graph_breaks=3.0, compile_rounds=[2.91, 2.88])
    engine = make_engine(db_url)
    [base_run] = find_runs(base)
    [head_run] = find_runs(head)
    base_id = ingest_bundle(engine, bundle_of(base_run, branch="main")).run_id
    head_sha = json.loads(
        next(p for p in head.glob("vm-h200/*.json") if p.name != "machine.json").read_text()
    )["commit_hash"]
    base_sha = json.loads(
        next(p for p in base.glob("vm-h200/*.json") if p.name != "machine.json").read_text()
    )["commit_hash"]
    assert head_sha != base_sha
    head_id = ingest_bundle(
        engine, bundle_of(head_run, branch="pr-1", pr_number=1, merge_base_sha=base_sha)
    ).run_id
    yield engine, base_id, head_id
    engine.dispose()


def test_the_kernel_tables_are_stored_per_case_and_run(stored):
    engine, base_id, head_id = stored
    with engine.connect() as conn:
        case_id = conn.scalar(select(Case.id).where(Case.case_name == "quantize.Quantize").limit(1))
        [quantize] = [
            c
            for c in conn.execute(select(Case.id, Case.params).where(Case.case_name == "quantize.Quantize"))
            if c.params == {"backend": "te", "shape": "4x2048x5120", "variant": "fp8-current"}
        ]
        runs = case_kernel_runs(conn, quantize.id, limit=5)
    assert case_id is not None
    assert [r.table.run_id for r in runs] == [head_id, base_id]
    head, base = runs
    assert [k["name"] for k in head.table.kernels] == [EXTRA, CAST, AMAX]
    assert head.table.launches_per_call == 4.0 and base.table.device == "cuda"
    assert head.table.profiled_calls == 20 and head.pr_number == 1 and base.branch == "main"


def test_the_report_names_the_extra_kernel_the_graph_break_and_the_slower_compile(stored):
    engine, _, head_id = stored
    detect_after_upload(engine, head_id, URL)
    with Session(engine) as session:
        report = stored_pr_report(session, session.get(Run, head_id))
    rows = report.kernels
    by_what: dict[str, list] = {}
    for row in rows:
        by_what.setdefault(row.what, []).append(row)
    [kernel_set] = by_what["kernel set"]
    assert "fp8-current" in kernel_set.benchmark
    assert kernel_set.description == (f"appeared: {EXTRA} (1 per call); launches per call 3 -> 4")
    [breaks] = by_what["graph breaks"]
    assert breaks.description == "graph breaks 2 -> 3" and "fp8-delayed" in breaks.benchmark
    assert report.kernel_changes == 2
    [compile_time] = by_what["compile time"]
    assert compile_time.verdict == "regression" and compile_time.change == pytest.approx(0.8, abs=0.05)
    assert not any(r.benchmark.endswith("compile_seconds") for r in report.regressions)
    attributed = {r.benchmark: r for r in by_what["attribution"]}
    quantize = next(r for b, r in attributed.items() if "fp8-current" in b and "kernel_seconds" in b)
    assert quantize.verdict == "regression"
    moved, of = re.fullmatch(
        rf"{re.escape(EXTRA)} \+([\d.]+) us of \+([\d.]+) us", quantize.description
    ).groups()
    assert float(moved) == pytest.approx(float(of), rel=0.05)  # the extra pass accounts for the slowdown


def test_a_kernel_set_change_on_main_opens_a_kernels_alert(db_url, tmp_path):
    """The base on main, then the head's results filed on main after it: the extra kernel opens one
    `kernels` alert; the same run detected again opens none."""
    base, head = tmp_path / "base", tmp_path / "head"
    shutil.copytree(KEPT / "base-results", base)
    shutil.copytree(KEPT / "head-results", head)
    _add_kernels(base, extra_pass=False, graph_breaks=2.0, compile_rounds=[1.62, 1.60])
    _add_kernels(head, extra_pass=True, graph_breaks=2.0, compile_rounds=[1.61, 1.63])
    engine = make_engine(db_url)
    try:
        ingest_bundle(engine, bundle_of(find_runs(base)[0], branch="main"))
        head_id = ingest_bundle(engine, bundle_of(find_runs(head)[0], branch="main")).run_id
        summary = detect_after_upload(engine, head_id, URL)
        assert summary.kernel_alerts == 1
        assert detect_after_upload(engine, head_id, URL).kernel_alerts == 0
        with Session(engine) as session:
            [alert] = session.scalars(select(Alert).where(Alert.kind == AlertKind.kernels)).all()
        assert alert.run_id == head_id and alert.branch == "main"
        assert f"appeared: {EXTRA} (1 per call)" in alert.title
        assert alert.details["changes"] == [f"appeared: {EXTRA} (1 per call)", "launches per call 3 -> 4"]
        with app_in_process(db_url) as app, app.client(token=None) as client:
            [listed] = client.get("/api/v1/alerts", params={"kind": "kernels"}).json()
            assert listed["id"] == alert.id and listed["case_id"] == alert.case_id
            shown = html.escape(EXTRA, quote=False)
            assert shown in client.get("/alerts").text and shown in client.get(f"/alerts/{alert.id}").text
    finally:
        engine.dispose()


def test_a_kernel_table_that_cannot_be_stored_is_refused_naming_the_record(tmp_path):
    folder = tmp_path / "head"
    shutil.copytree(KEPT / "head-results", folder)
    path, record = _record(folder, QUANTIZE)
    row = {"name": "k", "calls_per_call": 1.0, "total_seconds": 1e-6, "mean_seconds": 1e-6}
    record["kernels"] = {"device": "cuda", "profiled_calls": 20, "table": [row, row]}
    path.write_text(json.dumps(record))
    with pytest.raises(IngestError, match="listed twice") as raised:
        from tewatch.ingest.plan import build_plan

        build_plan(bundle_of(find_runs(folder)[0], branch="main"))
    assert QUANTIZE in str(raised.value.file) and raised.value.field == "kernels.table"

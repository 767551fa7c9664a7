"""A pull request's Memory and Numerics sections through ingest, the store and detection (SQLite and
PostgreSQL), on the kept H200 A/A campaign (tests/fixtures/h200-memnum-ab: one round, so no runs of identical
code to learn noise from) with values of an H200 A/A of TE 2.20.2 written into its records: reserved bytes
+128 MiB (1802 -> 1930 MiB, measured on training.TrainSteps te fp8-current graphed) and the offload suite's
offloaded-vs-plain errors (offload.CpuOffloadTransformerLayer, fp8-current and bf16) are inconclusive, not a
regression nor drift, while a deterministic family (peak allocated bytes, a check's error value) still
flags a 1 % change on the same single pair."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from tests.conftest import FIXTURES
from tests.uploads import bundle_of
from tewatch.alerts.markdown import render_pr_report
from tewatch.ingest.discover import find_runs
from tewatch.ingest.service import ingest_bundle
from tewatch.pipeline.detection import detect_after_upload
from tewatch.pipeline.pr_report import stored_pr_report
from tewatch.store.schema.alert_models import Alert
from tewatch.store.schema.models import Run

KEPT = FIXTURES / "h200-memnum-ab"
OFFLOAD_FP8 = "offload.CpuOffload-359316971b80"
OFFLOAD_BF16 = "offload.CpuOffload-dd6059c0a66e"
LINEAR = "linear.LinearFwdBwd-274402bedd00"  # eager, rank 2, fp8-current
GEMM = "gemm.Gemm-52600a11c75c"  # nvfp4-ref, its check: rel-L2 vs fp32 within 0.25
MIB = 2**20
URL = "http://tw.example"

# metric -> (base, A/A arm) as the H200 measured them
AA_VALUES = {
    OFFLOAD_FP8: {
        "peak_reserved_bytes": (1802 * MIB, 1930 * MIB),
        "offloaded_dgrad_vs_plain_rel_l2": (0.00286, 0.121),
        "offloaded_wgrad_vs_plain_max_abs": (16.0, 343.0),
        "offloaded_dgrad_vs_plain_sqnr_db": (50.9, 18.4),
    },
    OFFLOAD_BF16: {
        "offloaded_dgrad_vs_plain_max_abs": (1.25, 1.0),
        "offloaded_wgrad_vs_plain_max_abs": (20.0, 16.0),
    },
    LINEAR: {"peak_reserved_bytes": (1802 * MIB, 1930 * MIB)},
}


def _edit(folder: Path, name: str, edit) -> None:
    [path] = folder.glob(f"vm-h200/*.tewatch/cases/{name}.json")
    record = json.loads(path.read_text())
    edit(record)
    path.write_text(json.dumps(record))


def _set(values: dict[str, float]):
    def edit(record: dict) -> None:
        for metric, value in values.items():
            record["metrics"][metric]["value"] = value

    return edit


def _one_percent_more(record: dict) -> None:
    record["metrics"]["peak_allocated_bytes"]["value"] *= 1.01


def _check_one_percent_worse(record: dict) -> None:
    worse = record["metrics"]["output_vs_fp32_rel_l2"]["value"] * 1.01
    record["metrics"]["output_vs_fp32_rel_l2"]["value"] = worse
    record["verdict"]["value"] = worse


def _sha(folder: Path) -> str:
    [meta] = [p for p in folder.glob("vm-h200/*.json") if p.name != "machine.json"]
    return json.loads(meta.read_text())["commit_hash"]


@pytest.fixture
def stored(engine, tmp_path):
    """(engine, head run id): the base on main, the A/A arm as pull request 1 against it."""
    base, head = tmp_path / "base", tmp_path / "aa"
    shutil.copytree(KEPT / "base-results", base)
    shutil.copytree(KEPT / "aa-results", head)
    for name, values in AA_VALUES.items():
        _edit(base, name, _set({metric: pair[0] for metric, pair in values.items()}))
        _edit(head, name, _set({metric: pair[1] for metric, pair in values.items()}))
    _edit(head, LINEAR, _one_percent_more)
    _edit(head, GEMM, _check_one_percent_worse)
    [base_run], [head_run] = find_runs(base), find_runs(head)
    ingest_bundle(engine, bundle_of(base_run, branch="main"))
    head_id = ingest_bundle(
        engine, bundle_of(head_run, branch="pr-1", pr_number=1, merge_base_sha=_sha(base))
    ).run_id
    return engine, head_id


def test_unreproducible_families_are_inconclusive_while_deterministic_ones_flag_one_percent(stored):
    engine, head_id = stored
    detect_after_upload(engine, head_id, URL)
    with Session(engine) as session:
        report = stored_pr_report(session, session.get(Run, head_id))
        alerts = session.scalars(select(Alert)).all()

    assert sorted((row.verdict, row.benchmark.split(".")[0]) for row in report.memory) == [
        ("inconclusive", "offload"),
        ("regression", "linear"),
    ]
    [reserved] = [row for row in report.memory if row.verdict == "inconclusive"]
    assert reserved.change_bytes == 128 * MIB
    assert reserved.description == (
        "peak_reserved_bytes 1802.0 MiB -> 1930.0 MiB, +128.0 MiB (+7.1 %); "
        "no runs of identical code yet: reserved bytes follow the allocator"
    )
    [peak] = [row for row in report.memory if row.verdict == "regression"]
    # the case's reserved bytes moved 128 MiB too: its row is the 1 % it decides on, the other counted
    assert peak.description.startswith("peak_allocated_bytes") and peak.change_share == pytest.approx(0.01)
    assert peak.other_changes == 1
    assert report.memory_failures == 0

    verdicts = [(row.verdict, row.benchmark.split(".")[0]) for row in report.numerics]
    assert verdicts == [("drift", "gemm")] + [("inconclusive", "offload")] * 5
    drift = report.numerics[0]
    assert drift.metric == "rel-L2 of output vs fp32" and drift.tolerance == 0.25
    assert drift.change == pytest.approx(0.01)
    assert all("no runs of identical code yet" in row.description for row in report.numerics[1:])
    assert report.numerics_drift == 1
    assert "1 error metric drifting" in render_pr_report(report)

    # a pull request's memory and numerics rows open no alert, and main's single run no change point
    assert alerts == []

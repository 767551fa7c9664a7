"""Suspect speed-ups are counted apart from improvements, through ingest, the store and detection (SQLite
and PostgreSQL). The kept H200 A/B rounds (tests/fixtures/h200-ab-rounds) turned around: the perturbed
side on main, TE as released as pull request 1, so the four slowdowns read as 23 cases' speed-ups. Three
of them are made suspect the three ways docs/kernels.md names: the FP8 current-scaling quantize case drops
the base's extra kernel (its kernel list changed), the bf16 GEMM's head claims 1.3 of the bytes-moved
ceiling, and a reference quantize case's timed output is wrong (its `timed_output` check fails)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from tests.pipeline.test_kernels_report import KEPT, _add_kernels
from tests.uploads import bundle_of
from tewatch.findings.headline import headline
from tewatch.github.report import commit_state, parse_report
from tewatch.ingest.discover import find_runs
from tewatch.ingest.service import ingest_bundle
from tewatch.pipeline.detection import detect_after_upload
from tewatch.pipeline.pr_report import stored_pr_report
from tewatch.store.engine.database import make_engine
from tewatch.store.schema.alert_models import WebhookEvent
from tewatch.store.schema.models import Run

SPEED_UPS = 23  # cases the turned-around rounds find faster
GEMM = {"recipe": "bf16", "shape": "8192x8192x5120"}
QUANTIZE = {"backend": "te", "shape": "4x2048x5120", "variant": "fp8-current"}
REFERENCE = {"backend": "te-ref", "shape": "4x2048x5120", "variant": "nvfp4-row"}


def _edit(folder: Path, case: str, params: dict, change) -> None:
    for path in folder.glob(f"vm-h200/*.tewatch/cases/{case}-*.json"):
        record = json.loads(path.read_text())
        if record["params"] == params:
            change(record)
            path.write_text(json.dumps(record))
            return
    raise AssertionError(f"no {case} {params} in {folder}")


def _beyond_the_ceiling(record: dict) -> None:
    record["metrics"]["share_of_ceiling"]["value"] = 1.3


def _wrong_output(record: dict) -> None:
    record["verdict"] = {
        "check": "timed_output",
        "status": "fail_accuracy",
        "metric": "differing_tensors",
        "value": 1.0,
        "tolerance": 0.0,
    }


def suspect_rounds(folder: Path) -> tuple[Path, Path]:
    """(base, head) results folders: the perturbed rounds for main, TE as released for the pull request,
    with three of its speed-ups made suspect."""
    base, head = folder / "base", folder / "head"
    shutil.copytree(KEPT / "head-results", base)
    shutil.copytree(KEPT / "base-results", head)
    _add_kernels(base, extra_pass=True, graph_breaks=2.0, compile_rounds=[1.62, 1.60])
    _add_kernels(head, extra_pass=False, graph_breaks=2.0, compile_rounds=[1.61, 1.62])
    _edit(head, "gemm.Gemm", GEMM, _beyond_the_ceiling)
    _edit(head, "quantize.Quantize", REFERENCE, _wrong_output)
    return base, head


def commit_of(folder: Path) -> str:
    [results] = [p for p in folder.glob("vm-h200/*.json") if p.name != "machine.json"]
    return json.loads(results.read_text())["commit_hash"]


@pytest.fixture
def detected(db_url, tmp_path):
    """(engine, head run id), detection done."""
    base, head = suspect_rounds(tmp_path)
    engine = make_engine(db_url)
    [base_run], [head_run] = find_runs(base), find_runs(head)
    ingest_bundle(engine, bundle_of(base_run, branch="main"))
    head_id = ingest_bundle(
        engine, bundle_of(head_run, branch="pr-1", pr_number=1, merge_base_sha=commit_of(base))
    ).run_id
    detect_after_upload(engine, head_id, "http://tw.example")
    yield engine, head_id
    engine.dispose()


def test_a_suspect_speed_up_is_counted_apart_and_never_among_the_improvements(detected):
    engine, head_id = detected
    with Session(engine) as session:
        report = stored_pr_report(session, session.get_one(Run, head_id))
        [body] = session.scalars(select(WebhookEvent.body).where(WebhookEvent.type == "pr.report"))
    suspects = [k for k in report.kernels if k.what == "suspect speed-up"]
    reasons = {row.description for row in suspects}
    assert {"faster, but the kernel list changed", "faster, but 1.30 of the bytes-moved ceiling"} <= reasons
    assert "faster, but its timed output was wrong" in reasons
    suspect_series = {row.series_id for row in suspects}
    assert not suspect_series & {t.series_id for t in report.improvements}
    assert report.case_counts["suspect"] == 3
    assert report.case_counts["improvement"] == SPEED_UPS - 3
    assert sum(report.counts.get(v, 0) for v in ("suspect", "improvement")) >= SPEED_UPS

    said = headline(report)
    assert said.count("suspects") == 3 and said.count("improvements") == SPEED_UPS - 3
    assert "20 improvements · 3 suspect speed-ups" in said.text
    # the comment and the commit status GitHub gets say the same
    event = parse_report(body)
    assert f"**{said.text}** (cases)" in event.report.markdown
    assert commit_state(event) == (
        "failure",
        "1 new correctness failure, 0 regressions against the merge base",
    )
    [failure] = event.report.correctness
    assert failure.status == "fail_accuracy" and "timed_output" in failure.detail

"""The kept release history (tests/fixtures/h200-releases): its manifest, its runs filed under each
release's commit and date, and two runs judged against each other through /api/v1/compare; a copy of a
release's run with slower GEMMs is what makes the comparer say so (the stored release steps:
tests/pipeline/test_release_steps.py)."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session

from tests.conftest import REPO_ROOT
from tewatch.api.app import create_app
from tewatch.campaign.demo import RELEASE_HISTORY, load_runs
from tewatch.campaign.release_history import MANIFEST, ReleaseHistoryError, release_runs
from tewatch.core.settings import Settings
from tewatch.ingest.discover import find_runs
from tewatch.store.engine.database import make_engine
from tewatch.store.engine.migrate import upgrade
from tewatch.store.schema.alert_models import Alert, AlertKind
from tewatch.store.schema.models import Case, Commit, Environment, Run, Verdict

HISTORY = REPO_ROOT / RELEASE_HISTORY


def test_the_manifest_lists_the_releases_oldest_first_under_their_commits():
    releases = release_runs(HISTORY)
    assert [r.version for r in releases] == ["2.18.0", "2.19.0", "2.20.2", "2.20.2"]
    assert releases[0].commit.startswith("27486e03") and releases[1].commit.startswith("b4475763")
    for release in releases:
        [run] = release.runs()
        run_json = json.loads(run.run.read_text())
        assert run_json["versions"]["te"] == release.version
        assert run_json["commit"].startswith(release.commit)


def _manifest(tmp_path: Path, runs: list[dict], schema: str = "tewatch.release-history/1") -> Path:
    (tmp_path / MANIFEST).write_text(json.dumps({"schema": schema, "runs": runs}))
    return tmp_path


ENTRY = {"version": "1.0", "folder": "a", "commit": "a" * 40, "commit_date": "2026-01-02T00:00:00+00:00"}


@pytest.mark.parametrize(
    ("runs", "schema", "message"),
    [
        ([{**ENTRY, "dated_by": "commit"}], "other/1", "schema is 'other/1'"),
        ([ENTRY], "tewatch.release-history/1", "lacks or misstates 'dated_by'"),
        (
            [{**ENTRY, "dated_by": "commit", "commit_date": "yesterday"}],
            "tewatch.release-history/1",
            "misstates",
        ),
        (
            [
                {**ENTRY, "dated_by": "commit"},
                {**ENTRY, "dated_by": "commit", "commit_date": "2025-01-01T00:00:00+00:00"},
            ],
            "tewatch.release-history/1",
            "not listed oldest first",
        ),
    ],
)
def test_a_manifest_that_misstates_its_runs_is_refused_with_the_reason(tmp_path, runs, schema, message):
    with pytest.raises(ReleaseHistoryError, match=message):
        release_runs(_manifest(tmp_path, runs, schema))


def test_a_folder_that_holds_another_commit_is_refused(tmp_path):
    shutil.copytree(HISTORY / "2.19.0", tmp_path / "a")
    [release] = release_runs(_manifest(tmp_path, [{**ENTRY, "dated_by": "commit"}]))
    with pytest.raises(ReleaseHistoryError, match="expected runs of commit aaaaaaaa"):
        release.runs()


def _slower_gemms(folder: Path, into: Path, factor: float) -> Path:
    """A copy of a release's run whose GEMM timings are all `factor` times slower."""
    shutil.copytree(folder, into)
    [run] = find_runs(into)
    results = json.loads(run.result.read_text())
    result, samples = results["result_columns"].index("result"), results["result_columns"].index("samples")
    for name, row in results["results"].items():
        if name.startswith("gemm.Gemm."):
            row[result] = [v * factor if v is not None else None for v in row[result]]
            row[samples] = [[s * factor for s in one] if one else one for one in row[samples]]
    run.result.write_text(json.dumps(results))
    return into


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("releases")
    url = f"sqlite:///{tmp / 'releases.sqlite3'}"
    upgrade(url)
    ids = {}
    for release in release_runs(HISTORY)[:2]:
        [(ids[release.version], _)] = load_runs(url, release.runs(), "main", commit_date=release.commit_date)
    slower = _slower_gemms(HISTORY / "2.19.0", tmp / "slower", 1.25)
    [(ids["slower"], _)] = load_runs(url, find_runs(slower), "main")
    return url, ids


@pytest.fixture(scope="module")
def api(store):
    """The service's app over the release store, called in this process."""
    app = create_app(Settings(database_url=store[0]))
    with TestClient(app) as client:
        yield client
    app.state.engine.dispose()


@pytest.fixture
def session(store):
    engine = make_engine(store[0])
    with Session(engine) as session:
        yield session
    engine.dispose()


def test_each_release_is_filed_under_its_commit_date_and_version(store, session):
    _, ids = store
    rows = session.execute(
        select(Commit.sha, Commit.committed_at, Environment.te_version)
        .join(Run, Run.commit_id == Commit.id)
        .join(Environment, Environment.id == Run.environment_id)
        .where(Run.id.in_([ids["2.18.0"], ids["2.19.0"]]))
        .order_by(Run.id)
    ).all()
    assert [(sha[:8], version) for sha, _, version in rows] == [
        ("27486e03", "2.18.0"),
        ("b4475763", "2.19.0"),
    ]
    dated = [at.replace(tzinfo=UTC) if at.tzinfo is None else at for _, at, _ in rows]
    assert dated == [
        datetime(2026, 8, 4, 16, 31, 24, tzinfo=UTC),
        datetime(2026, 8, 22, 21, 41, 12, tzinfo=UTC),
    ]


def test_the_compare_endpoint_gives_the_comparers_verdict_per_series(store, api):
    _, ids = store
    rows = api.get("/api/v1/compare", params={"base": ids["2.19.0"], "head": ids["slower"]}).json()["rows"]
    gemm = [r for r in rows if r["benchmark"] == "gemm.Gemm.track_seconds" and r["verdict"]]
    assert gemm and {r["verdict"] for r in gemm} == {"regression"}
    assert all(r["ci_low"] < r["effect"] < r["ci_high"] for r in gemm)
    quantize = {r["verdict"] for r in rows if r["benchmark"].startswith("quantize.")}
    assert "regression" not in quantize and "improvement" not in quantize


def test_a_series_labels_each_release_commit_with_its_te_version(store, api):
    _, ids = store
    rows = api.get("/api/v1/compare", params={"base": ids["2.18.0"], "head": ids["2.19.0"]}).json()["rows"]
    gemm = next(r for r in rows if r["benchmark"] == "gemm.Gemm.track_seconds" and r["head_value"])
    chart = api.get(f"/series/{gemm['series_id']}/points.json", params={"branch": "main"}).json()
    labels = [chart["labels"][str(p["x"])] for p in chart["points"]]
    assert labels[:2] == ["27486e0\nTE 2.18.0", "b447576\nTE 2.19.0"]
    assert [s["label"] for s in chart["shifts"]] == ["TE 2.18.0 → 2.19.0"]


def test_a_check_that_flips_between_releases_opens_its_alert_with_the_release_that_broke_it(store, session):
    _, ids = store
    parity = session.execute(
        select(Verdict.run_id, Verdict.status, Verdict.id)
        .join(Case, Case.id == Verdict.case_id)
        .where(
            Case.case_name == "contracts.CheckpointParity",
            Verdict.run_id.in_([ids["2.18.0"], ids["2.19.0"]]),
        )
        .where(Case.recipe == "fp8-current")
        .order_by(Verdict.run_id)
    ).all()
    assert [(run, status.value) for run, status, _ in parity] == [
        (ids["2.18.0"], "pass"),
        (ids["2.19.0"], "fail_accuracy"),
    ]
    [alert] = session.scalars(
        select(Alert).where(Alert.kind == AlertKind.correctness, Alert.verdict_id == parity[1][2])
    ).all()
    # the seed bug failed from the first release on: its alert is 2.18.0's, not reopened by 2.19.0
    recursion = session.scalars(
        select(Alert.run_id)
        .join(Case, Case.id == Alert.case_id)
        .where(Alert.kind == AlertKind.correctness, Case.case_name == "contracts.CpuRoundTrip")
    ).all()
    assert alert.status.value == "open" and alert.run_id == ids["2.19.0"]
    assert recursion == [ids["2.18.0"]]

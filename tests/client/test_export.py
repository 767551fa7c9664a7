"""`tewatch export` against a real server with the bundled H200 history: the client's frames as Parquet
(dtypes kept) or CSV, for a branch, a machine, a pull request or a time range; errors in one line."""

from __future__ import annotations

import subprocess

import pandas as pd
import pytest

from tests.conftest import free_port
from tests.served import run_cli
from tewatch.client import Client


def export(url: str, out, *options: str) -> subprocess.CompletedProcess:
    return run_cli(["export", str(out), "--url", url, *options], timeout=300)


@pytest.fixture(scope="module")
def tw(history):
    with Client(history.url) as client:
        yield client


def test_a_branch_as_parquet_reads_back_as_the_clients_frames(history, tw, tmp_path):
    done = export(history.url, tmp_path, "--branch", "main")
    assert done.returncode == 0, done.stderr
    names = ["runs", "samples", "verdicts", "change_points", "alerts"]
    assert [line.split(":")[0] for line in done.stdout.splitlines()] == [
        str(tmp_path / f"{n}.parquet") for n in names
    ]
    runs = tw.runs(branch="main")
    expected = {
        "runs": runs,
        "samples": tw.samples(runs=runs),
        "verdicts": tw.verdicts(branch="main"),
        "change_points": tw.change_points(branch="main", active=None),
        "alerts": tw.alerts(branch="main"),
    }
    for name, frame in expected.items():
        back = pd.read_parquet(tmp_path / f"{name}.parquet")
        # a category column with no value at all comes back with categories of dtype object, not str
        empty = [
            c for c in frame if isinstance(frame[c].dtype, pd.CategoricalDtype) and frame[c].isna().all()
        ]
        pd.testing.assert_frame_equal(back.drop(columns=empty), frame.drop(columns=empty), obj=name)
        assert all(isinstance(back[c].dtype, pd.CategoricalDtype) and back[c].isna().all() for c in empty)
    assert (
        len(expected["runs"]) == 4
        and len(expected["samples"]) > 10_000
        and len(expected["change_points"]) == 2
    )


def test_a_machine_as_csv(history, tmp_path):
    done = export(history.url, tmp_path, "--machine", "h200x2", "--format", "csv")
    assert done.returncode == 0, done.stderr
    runs = pd.read_csv(tmp_path / "runs.csv")
    assert len(runs) == 2 and set(runs["machine"]) == {"h200x2"} and set(runs["gpu_model"]) == {"NVIDIA H200"}
    assert runs["committed_at"].str.endswith("+00:00").all()
    samples = pd.read_csv(tmp_path / "samples.csv")
    assert set(samples["run_id"]) == set(runs["run_id"]) and set(samples["case_name"]) == {
        "distributed.LinearTensorParallel"
    }
    verdicts = pd.read_csv(tmp_path / "verdicts.csv")
    assert set(verdicts["run_id"]) <= set(runs["run_id"]) and set(verdicts["world_size"]) == {1, 2}
    # the change points and alerts of the bundled history came from the one-GPU runs
    assert pd.read_csv(tmp_path / "change_points.csv").empty
    alerts = pd.read_csv(tmp_path / "alerts.csv")
    assert set(alerts["run_id"]) <= set(runs["run_id"])


def test_a_pull_request_and_a_time_range(history, tw, tmp_path):
    done = export(history.url, tmp_path / "pr", "--pr", "1", "--table", "runs", "--table", "comparisons")
    assert done.returncode == 0, done.stderr
    assert pd.read_parquet(tmp_path / "pr" / "runs.parquet")["run_id"].tolist() == [history.pr_run]
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "pr" / "comparisons.parquet"), tw.comparisons(1))
    first = tw.runs().sort_values("started_at").iloc[0]
    since, until = (
        first["started_at"].isoformat(),
        (first["started_at"] + pd.Timedelta(seconds=1)).isoformat(),
    )
    done = export(history.url, tmp_path / "range", "--since", since, "--until", until, "--format", "csv")
    assert done.returncode == 0, done.stderr
    assert pd.read_csv(tmp_path / "range" / "runs.csv")["run_id"].tolist() == [first["run_id"]]
    assert set(pd.read_csv(tmp_path / "range" / "samples.csv")["run_id"]) == {first["run_id"]}


def test_tables_are_named_as_their_files(history, tw, tmp_path):
    for spelled in ("change_points", "change-points"):
        done = export(history.url, tmp_path / spelled, "--branch", "main", "--table", spelled)
        assert done.returncode == 0, done.stderr
        assert [p.name for p in (tmp_path / spelled).iterdir()] == ["change_points.parquet"]
        back = pd.read_parquet(tmp_path / spelled / "change_points.parquet")
        assert len(back) == len(tw.change_points(branch="main", active=None)) == 2


def test_errors_are_one_line(history, tmp_path):
    nowhere = export(f"http://127.0.0.1:{free_port()}", tmp_path)
    assert nowhere.returncode == 1 and nowhere.stderr.startswith(
        "error: cannot reach tewatch at http://127.0.0.1:"
    )
    refused = export(history.url, tmp_path, "--since", "yesterday")
    assert refused.returncode == 1
    assert refused.stderr.startswith(
        "error: GET /api/v1/runs answered HTTP 422: since: Input should be a valid"
    )
    for problem in (nowhere, refused):
        assert "Traceback" not in problem.stderr and len(problem.stderr.strip().splitlines()) == 1
    unknown = export(history.url, tmp_path, "--table", "nope")
    assert unknown.returncode == 1 and "unknown table nope" in unknown.stderr
    no_pr = export(history.url, tmp_path, "--table", "comparisons")
    assert no_pr.returncode == 1 and "give --pr" in no_pr.stderr
    assert not list(tmp_path.iterdir())  # nothing written by a refused export

"""asv's results format 1 (tests/fixtures/asv-v1, written by asv 0.4.2) is read as asv 0.6 reads it, and a
results file naming benchmarks that benchmarks.json lacks is stored without them, as asv leaves them out."""

from __future__ import annotations

import ast
import itertools
import json
import math
import shutil

import pytest
from asv.results import Results
from sqlalchemy import select

from tests.conftest import ASV_V1
from tests.served import run_cli
from tests.uploads import files_of, parts_of, post_run
from tewatch.ingest.asv_files import parse_results
from tewatch.ingest.asv_v1 import update_to_2
from tewatch.ingest.discover import find_runs
from tewatch.store.engine.database import make_engine
from tewatch.store.schema.models import Benchmark, Case, Machine, Result, Run, Series

RUNS = find_runs(ASV_V1)
DROPPED = "suite.track_value"  # the first commit's files name it; the second commit's suite dropped it


def _names_dropped(run) -> bool:
    return DROPPED in json.loads(run.result.read_text())["results"]


def _run_id(run) -> str:
    return f"{run.result.parent.name}:{run.result.name[:8]}"


def test_the_fixture_is_asv_format_1_on_two_machines():
    versions = {json.loads(run.result.read_text())["version"] for run in RUNS}
    assert versions == {1} and len(RUNS) == 4
    assert {run.result.parent.name for run in RUNS} == {"laptop-a", "laptop-b"}
    assert sorted(run.result.parent.name for run in RUNS if _names_dropped(run)) == ["laptop-a", "laptop-b"]


@pytest.mark.parametrize("run", RUNS, ids=_run_id)
def test_update_to_2_writes_what_asv_writes(run):
    data = json.loads(run.result.read_text())  # json reads asv's bare NaN and -Infinity
    ours = update_to_2(json.loads(run.result.read_text()), run.result.name)
    asv = {**Results.update_to_2(data), "version": 2}  # asv's write_json adds the version
    assert json.dumps(ours, sort_keys=True) == json.dumps(asv, sort_keys=True)


def test_a_file_without_env_name_gets_asv_s_name_for_it():
    data = json.loads(RUNS[0].result.read_text())
    del data["env_name"]
    data["requirements"] = {"numpy": "1.8", "Cython": None, "six": ""}
    expected = Results.update_to_2(json.loads(json.dumps(data)))
    assert update_to_2(data, "f")["env_name"] == expected["env_name"] == "py3.11-Cython-numpy1.8-six"


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        (lambda d: d.pop("commit_hash"), "commit_hash"),
        (lambda d: d.update(results=[]), "results"),
        (lambda d: d.update(benchmark_version="x"), "benchmark_version"),
        (
            lambda d: d["results"].update({"suite.time_sleep": {"samples": [[1.0]]}}),
            "suite.time_sleep.result",
        ),
        (lambda d: d["results"]["suite.time_sleep"]["stats"][0].pop("ci_99"), "ci_99"),
        (lambda d: d["results"]["suite.time_sleep"].update(stats=[7]), "suite.time_sleep.stats"),
        (lambda d: d["results"].update({"suite.time_sleep": [[[1.0]]]}), "suite.time_sleep.result"),
        (lambda d: d.update(version=3), "version"),
        (lambda d: d.update(version=True), "version"),
    ],
)
def test_a_malformed_version_1_file_is_an_error_naming_its_field(edit, field):
    from tewatch.ingest.errors import IngestError

    data = json.loads(RUNS[0].result.read_text())
    edit(data)
    with pytest.raises(IngestError) as caught:
        parse_results(json.dumps(data).encode(), "r.json")
    assert field in f"{caught.value.field}"


def _asv_reads(run, tmp_path) -> tuple[Results, dict]:
    """The file as asv 0.6.6 reads it: `asv update` (Results.update), then Results.load."""
    copy = tmp_path / run.result.parent.name / run.result.name
    copy.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(run.result, copy)
    Results.update(str(copy))
    return Results.load(str(copy)), json.loads(run.benchmarks.read_text())


def _stored(db_url: str, run_id: int) -> dict[tuple[str, str], tuple[str, float | None, list | None]]:
    """(benchmark, params as JSON) -> (status, value, samples) of one stored run."""
    engine = make_engine(db_url)
    with engine.connect() as conn:
        rows = conn.execute(
            select(Benchmark.name, Case.params, Result.status, Result.value, Result.samples)
            .join(Series, Series.id == Result.series_id)
            .join(Benchmark, Benchmark.id == Series.benchmark_id)
            .join(Case, Case.id == Series.case_id)
            .where(Result.run_id == run_id)
        ).all()
    engine.dispose()
    return {
        (name, json.dumps(params, sort_keys=True)): (status, value, samples)
        for name, params, status, value, samples in rows
    }


def test_uploads_store_the_values_asv_reads_and_skip_what_benchmarks_json_lacks(in_process_app, tmp_path):
    with in_process_app.client() as client:
        answers = [post_run(client, parts_of(run), branch="main") for run in RUNS]
        # the answer to the same upload again says the same
        partial = next(run for run in RUNS if _names_dropped(run))
        again = post_run(client, parts_of(partial), branch="main").json()
    assert again["created"] is False and again["skipped_benchmarks"]["names"] == [DROPPED]
    for run, answer in zip(RUNS, answers, strict=True):
        assert answer.status_code == 201, answer.text
        body = answer.json()
        assert body["results_format"] == 1
        asv, benchmarks = _asv_reads(run, tmp_path)
        missing = sorted(set(asv.get_all_result_keys()) - set(benchmarks))
        assert missing == ([DROPPED] if _names_dropped(run) else [])
        expected_skip = {"count": len(missing), "names": missing} if missing else None
        assert body["skipped_benchmarks"] == expected_skip
        stored = _stored(in_process_app.db_url, body["run_id"])
        compared = 0
        for key in sorted(set(asv.get_all_result_keys()) & set(benchmarks)):
            params = asv.get_result_params(key)
            values = asv.get_result_value(key, params)
            samples = asv.get_result_samples(key, params)
            combos = list(itertools.product(*params)) if params else [()]
            for combo, value, sample in zip(combos, values, samples, strict=True):
                names = benchmarks[key]["param_names"]
                decoded = {n: ast.literal_eval(p) for n, p in zip(names, combo, strict=True)}  # asv's reprs
                status, stored_value, stored_samples = stored[(key, json.dumps(decoded, sort_keys=True))]
                if value is None:
                    assert status == "failed"
                elif math.isnan(value):
                    assert status == "skipped"
                else:
                    assert (status, stored_value) == ("ok", value)
                    assert stored_samples == sample
                compared += 1
        assert compared == len(stored) >= 8


def test_a_file_none_of_whose_benchmarks_benchmarks_json_names_is_refused_whole(in_process_app):
    parts = parts_of(RUNS[0])
    name, _ = parts["benchmarks"][0]
    parts["benchmarks"][0] = (
        name,
        json.dumps({"other.time_x": {"name": "other.time_x"}, "version": 2}).encode(),
    )
    before = in_process_app.counts()
    with in_process_app.client() as client:
        answer = client.post("/api/v1/runs", files=files_of(parts), data={"branch": "main"})
    assert answer.status_code == 422
    named = len(json.loads(RUNS[0].result.read_text())["results"])
    assert f"none of the results file's {named} benchmarks is in benchmarks.json" in answer.json()["detail"]
    assert in_process_app.counts() == before


def test_tewatch_upload_says_what_it_skipped_and_which_format_it_read(live_server, tmp_path):
    folder = tmp_path / "results"
    shutil.copytree(ASV_V1, folder)
    shutil.rmtree(folder / "laptop-b")
    for run in find_runs(folder):
        if not _names_dropped(run):
            run.result.unlink()
    done = run_cli(
        ["upload", str(folder), "--url", live_server.url, "--token", live_server.token, "--branch", "v1"],
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    (line,) = [line for line in done.stdout.splitlines() if line.startswith("run ")]
    assert line.endswith(
        "; read from asv results format 1; skipped 1 not in benchmarks.json, as asv does: suite.track_value"
    )


def test_the_run_summary_keeps_what_was_skipped(in_process_app):
    run = next(run for run in RUNS if _names_dropped(run) and run.result.parent.name == "laptop-b")
    parts = parts_of(run)
    name, content = parts["result"][0]
    parts["result"][0] = (name, content.replace(b'"commit_hash": "', b'"commit_hash": "0', 1))  # a new run
    with in_process_app.client() as client:
        body = post_run(client, parts, branch="summary").json()
    engine = make_engine(in_process_app.db_url)
    with engine.connect() as conn:
        summary, machine = conn.execute(
            select(Run.summary, Machine.name)
            .join(Machine, Machine.id == Run.machine_id)
            .where(Run.id == body["run_id"])
        ).one()
    engine.dispose()
    assert machine == "laptop-b"
    assert summary["results_format"] == 1
    assert summary["skipped_benchmarks"] == body["skipped_benchmarks"] == {"count": 1, "names": [DROPPED]}

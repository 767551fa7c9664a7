"""The `tewatch run` wrapper's pieces: commit choice, asv output splitting, results and sidecar."""

import hashlib
import json
import math
from pathlib import Path

import pytest

from benchmarks.harness import probe
from tewatch.core.asv_env import results_file_name
from tewatch.runner import results, sidecar
from tewatch.runner.commit import choose_commit


def test_commit_explicit_then_te_commit_then_hash_of_the_te_version() -> None:
    assert choose_commit("ABCDEF1234567", "2.20.2", "d0067d0") == ("abcdef1234567", "explicit")
    assert choose_commit(None, "2.20.0.dev0+d0067d0", "d0067d0") == ("d0067d0", "te_commit")
    sha, source = choose_commit(None, "2.20.2", "")
    assert source == "te_version_hash"
    assert sha == hashlib.sha1(b"transformer_engine==2.20.2").hexdigest()
    with pytest.raises(ValueError, match="not installed"):
        choose_commit(None, "", "")
    with pytest.raises(ValueError, match="hexadecimal"):
        choose_commit("main", "2.20.2", "")


def test_te_commit_from_local_version_or_direct_url() -> None:
    assert probe.te_commit("2.20.0.dev0+d0067d0", None) == "d0067d0"
    assert probe.te_commit("2.20.2", None) == ""
    url = json.dumps(
        {
            "url": "https://github.com/NVIDIA/TransformerEngine",
            "vcs_info": {"vcs": "git", "commit_id": "a" * 40},
        }
    )
    assert probe.te_commit("2.20.2", url) == "a" * 40


ASV_LOG = """\
[ 10.00%] ··· linear.LinearFwdBwd.track_seconds                              2/3 failed
            tewatch-case: linear.LinearFwdBwd-aaaaaaaaaaaa
            tewatch-case: linear.LinearFwdBwd-bbbbbbbbbbbb
            Traceback (most recent call last):
              File "x.py", line 1, in setup
            torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised: shape mismatch

            tewatch-case: linear.LinearFwdBwd-cccccccccccc

            asv: benchmark timed out (timeout 600s)
[ 20.00%] ··· rht.Rht.track_seconds                                                  ok
"""


def test_asv_output_is_split_per_case_by_the_marker_lines() -> None:
    parts = sidecar.split_by_case(ASV_LOG)
    assert parts["linear.LinearFwdBwd-aaaaaaaaaaaa"] == ""
    assert "BackendCompilerFailed" in parts["linear.LinearFwdBwd-bbbbbbbbbbbb"]
    assert "timed out" in parts["linear.LinearFwdBwd-cccccccccccc"]
    assert "ok" not in parts["linear.LinearFwdBwd-cccccccccccc"]


def test_failure_text_becomes_error_or_timeout() -> None:
    parts = sidecar.split_by_case(ASV_LOG)
    error = sidecar.failure_check(parts["linear.LinearFwdBwd-bbbbbbbbbbbb"])
    assert error["status"] == "error" and error["exception_class"] == "BackendCompilerFailed"
    assert "shape mismatch" in error["message"]
    timeout = sidecar.failure_check(parts["linear.LinearFwdBwd-cccccccccccc"])
    assert timeout["status"] == "timeout" and "600" in timeout["message"]
    crash = sidecar.failure_check("asv: benchmark failed (exit status -11)")
    assert crash["status"] == "error" and "-11" in crash["message"]


def _results_file(values: list) -> dict:
    return {
        "commit_hash": "f" * 40,
        "env_name": "existing-py",
        "result_columns": ["result", "params", "version"],
        "results": {"gemm.Gemm.track_seconds": [values, [["'bf16'", "'nvfp4'"], ["'8x8x16'"]], "v"]},
    }


def test_case_results_follow_asvs_product_order_with_python_values() -> None:
    benchmarks = {"gemm.Gemm.track_seconds": {"param_names": ["recipe", "shape"]}}
    found = list(results.iter_case_results(_results_file([1e-3, math.nan]), benchmarks))
    assert [c.params for c in found] == [
        {"recipe": "bf16", "shape": "8x8x16"},
        {"recipe": "nvfp4", "shape": "8x8x16"},
    ]
    assert found[0].case == "gemm.Gemm" and not found[0].failed and found[1].skipped
    failed = list(results.iter_case_results(_results_file(None), benchmarks))
    assert all(c.failed for c in failed)


def test_failed_cases_without_a_record_get_one_and_passing_records_are_amended(tmp_path: Path) -> None:
    benchmarks = {"gemm.Gemm.track_seconds": {"param_names": ["recipe", "shape"]}}
    cases = list(results.iter_case_results(_results_file([None, None]), benchmarks))
    cases_dir = tmp_path / "cases"
    cases_dir.mkdir()
    passing = {
        "schema": "tewatch.case/1",
        "case": "gemm.Gemm",
        "params": cases[1].params,
        "labels": {},
        "verdict": {"check": "vs_fp32", "status": "pass"},
        "extra_checks": [],
        "metrics": {},
        "gpu_state": {},
        "recorded_at": "2026-01-01T00:00:00Z",
    }
    (cases_dir / f"{cases[1].case_id}.json").write_text(json.dumps(passing))
    log = f"tewatch-case: {cases[1].case_id}\n\nasv: benchmark timed out (timeout 60s)\n"
    added = sidecar.complete_records(cases_dir, cases, log)
    assert added == {"missing": 1, "amended": 1}
    first = json.loads((cases_dir / f"{cases[0].case_id}.json").read_text())
    assert first["verdict"]["status"] == "error" and first["params"] == cases[0].params
    second = json.loads((cases_dir / f"{cases[1].case_id}.json").read_text())
    assert second["verdict"]["status"] == "timeout"
    assert second["extra_checks"] == [{"check": "vs_fp32", "status": "pass"}]


def test_the_service_side_case_id_matches_the_suites() -> None:
    from benchmarks.harness.records import case_id

    params = {"quantizer": "nvfp4", "rank": 3}
    assert results.case_id("contracts.ShapeContract", params) == case_id("contracts.ShapeContract", params)


def test_refile_moves_the_results_and_sidecar_under_another_commit(tmp_path: Path) -> None:
    data = _results_file([1.0, 2.0])
    path = tmp_path / results_file_name(data["commit_hash"], data["env_name"])
    results.save(path, data)
    (results.sidecar_dir(path) / "cases").mkdir(parents=True)
    moved = results.refile(path, "0123456789abcdef")
    assert moved.name == "01234567-existing-py.json" and not path.exists()
    assert results.load(moved)["commit_hash"] == "0123456789abcdef"
    assert (results.sidecar_dir(moved) / "cases").is_dir()
    assert results.find(tmp_path, "0123456789abcdef") == moved


def test_a_run_continued_with_another_chunk_keeps_both_filters_and_the_sum_of_wall_times() -> None:
    earlier = {
        "schema": sidecar.RUN_SCHEMA,
        "bench_filter": "^gemm\\.",
        "wall_seconds": 100.0,
        "started_at": "2026-11-29T20:00:00Z",
        "asv_exit_code": 2,
        "gpu_state_before": {"power_w": [90.0]},
    }
    later = {
        "bench_filter": "^linear\\.",
        "wall_seconds": 50.5,
        "started_at": "2026-11-29T20:02:00Z",
        "finished_at": "2026-11-29T20:03:00Z",
        "asv_exit_code": 0,
        "gpu_state_before": {"power_w": [300.0]},
        "profile": "full",
    }
    merged = sidecar.merge_runs(earlier, later)
    assert merged["bench_filter"] == "^gemm\\.|^linear\\." and merged["wall_seconds"] == 150.5
    assert merged["started_at"] == "2026-11-29T20:00:00Z" and merged["finished_at"] == "2026-11-29T20:03:00Z"
    assert merged["asv_exit_code"] == 2 and merged["gpu_state_before"] == {"power_w": [90.0]}
    assert sidecar.merge_runs({**earlier, "bench_filter": None}, later)["bench_filter"] is None


def test_the_probe_sees_the_interpreter_as_asv_gives_it_to_the_cases(tmp_path: Path) -> None:
    """asv runs the cases without PYTHONPATH: a TE reachable only through it must not name the run's
    commit, or every case fails to import TE under a release's commit."""
    import os
    import subprocess
    import sys

    from tewatch.runner.suite import RunOptions
    from tewatch.runner.suite import probe as run_probe

    dist = tmp_path / "transformer_engine-9.9.9.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: transformer_engine\nVersion: 9.9.9\n")
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    seen = subprocess.run(
        [sys.executable, "-c", "import importlib.metadata as m; print(m.version('transformer_engine'))"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert seen.stdout.strip() == "9.9.9"
    project = Path(__file__).resolve().parents[2]
    assert run_probe(RunOptions(project=project), env)["versions"]["te"] != "9.9.9"


def test_a_gpu_run_without_an_importable_te_is_announced_unless_only_torch_ref_runs() -> None:
    from tewatch.runner.suite import RunOptions, missing_te_warning

    project = Path(__file__).resolve().parents[2]
    info = {"te_error": "ModuleNotFoundError: No module named 'transformer_engine'"}
    warning = missing_te_warning(info, RunOptions(project=project, backends=("te", "torch-ref")))
    assert warning and "No module named 'transformer_engine'" in warning and "will be errors" in warning
    assert missing_te_warning(info, RunOptions(project=project)) == warning
    assert missing_te_warning(info, RunOptions(project=project, backends=("torch-ref",))) is None
    assert missing_te_warning({"te_error": ""}, RunOptions(project=project)) is None

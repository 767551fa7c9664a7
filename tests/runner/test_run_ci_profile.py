"""End to end: the real `tewatch run --profile ci --backends torch-ref` (real `asv run`, CPU torch) in a
throwaway git copy of the project, then the results file and every sidecar record are checked."""

import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tewatch.core import stderr_log_file

pytestmark = pytest.mark.long_setup

REPO = Path(__file__).resolve().parents[2]
COMMIT = "0123456789abcdef0123456789abcdef01234567"
SUITES = r"^(quantize|rht|gemm|linear|contracts)\."
# under spawn every case is a fresh interpreter (torch imported per case, no preload to lean on): one case
# of every class of SUITES, rank 2 of te.Linear eager and compiled, the rank-4 input of quantize
SPAWN_SUITES = (
    r"^(rht|gemm|contracts)\."
    r"|^quantize\.Quantize\.track_seconds\('torch-ref', 'nvfp4-row', '2x2x32x256'\)"
    r"|^linear\.LinearFwdBwd\.track_seconds\('torch-ref', 2, "
)
CASES_RUN = {"forkserver": 22, "spawn": 7}
STATUSES = {"pass", "fail_accuracy", "error", "unsupported", "timeout", "oom"}


def _runner(
    project: Path, home: Path, *args: str, inductor_cache: Path | None = None
) -> tuple[list[str], dict[str, str]]:
    env = dict(os.environ, HOME=str(home), TORCHINDUCTOR_CACHE_DIR=str(inductor_cache or home / "inductor"))
    env.pop("TEWATCH_PROFILE", None)
    env.pop("TEWATCH_BACKENDS", None)
    return [sys.executable, "-m", "tewatch.runner", "--project", str(project), *args], env


def tewatch_run(
    project: Path, home: Path, *args: str, inductor_cache: Path | None = None
) -> subprocess.CompletedProcess:
    command, env = _runner(project, home, *args, inductor_cache=inductor_cache)
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=900)


@pytest.fixture(scope="module")
def inductor_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One torch.compile cache for this file's runs: the te.Linear graphs the first run compiles, the
    later ones load (the key is the graph's and the generated code's content); each run still compiles
    through torch.compile and measures its compile time."""
    return tmp_path_factory.mktemp("inductor")


def ci_cpu_run(results: Path, bench: str) -> list[str]:
    """`tewatch run`'s options of the CI profile's runs here: its torch-ref cases that `bench` selects,
    filed under COMMIT on machine ci-cpu in `results`."""
    return ["--profile", "ci", "--backends", "torch-ref", "--bench", bench, "--machine", "ci-cpu",
            "--results-dir", str(results), "--commit", COMMIT]  # fmt: skip


@pytest.fixture(scope="module")
def runs(
    project: Path, inductor_cache: Path, tmp_path_factory: pytest.TempPathFactory
) -> Callable[[str], tuple[subprocess.CompletedProcess, Path]]:
    """The run of each launch method, made once when first asked for (the chunk test reads a copy of the
    spawn run's results)."""
    made: dict[str, tuple[subprocess.CompletedProcess, Path]] = {}

    def run_of(launch_method: str) -> tuple[subprocess.CompletedProcess, Path]:
        if launch_method not in made:
            home = tmp_path_factory.mktemp("home")
            results = tmp_path_factory.mktemp("results")
            proc = tewatch_run(
                project,
                home,
                *ci_cpu_run(results, SPAWN_SUITES if launch_method == "spawn" else SUITES),
                "--launch-method",
                launch_method,
                inductor_cache=inductor_cache,
            )
            made[launch_method] = proc, results
        return made[launch_method]

    return run_of


@pytest.fixture(scope="module", params=["forkserver", "spawn"])
def run(runs: Callable, request: pytest.FixtureRequest) -> tuple[subprocess.CompletedProcess, Path]:
    return runs(request.param)


def test_run_succeeds_and_files_results_under_the_given_commit(run: tuple) -> None:
    proc, results = run
    assert proc.returncode == 0, proc.stderr[-3000:]
    files = [p for p in (results / "ci-cpu").glob("*.json") if p.name != "machine.json"]
    assert [p.name[:9] for p in files] == [COMMIT[:8] + "-"]
    data = json.loads(files[0].read_text())
    assert data["commit_hash"] == COMMIT
    machine = json.loads((results / "ci-cpu" / "machine.json").read_text())
    assert machine["gpu_model"] == "cpu" and machine["compute_capability"] == ""
    assert machine["gpu_count"] == "0"
    # stderr is no terminal here: progress comes as a line per case asv starts, not a bar drawn nowhere
    progress = re.findall(r"^asv +(\d+\.\d)% +\d+ s  (\S+)", proc.stderr, re.M)
    assert len(progress) >= 10 and float(progress[-1][0]) >= 90


def _cases(results: Path) -> list[tuple[str, dict, object, list | None]]:
    """(case, params, value, samples) for every benchmark x params of the run."""
    import ast
    import itertools

    data = json.loads(next(p for p in (results / "ci-cpu").glob("0123*.json")).read_text())
    benchmarks = json.loads((results / "benchmarks.json").read_text())
    cols = data["result_columns"]
    out = []
    for name, row in data["results"].items():
        row = row + [None] * (len(cols) - len(row))
        names = benchmarks[name]["param_names"]
        samples = row[cols.index("samples")] or [None] * 10**4
        combos = itertools.product(*row[cols.index("params")])
        for combo, value, sample in zip(combos, row[cols.index("result")], samples, strict=False):
            params = {n: ast.literal_eval(v) for n, v in zip(names, combo, strict=False)}
            out.append((name.rsplit(".", 1)[0], params, value, sample))
    return out


def test_every_case_has_a_valid_record_and_every_timing_has_samples(
    run: tuple, request: pytest.FixtureRequest
) -> None:
    from tewatch.runner.results import case_id

    _, results = run
    sidecar = next((results / "ci-cpu").glob("*.tewatch"))
    cases = _cases(results)
    ran = [c for c in cases if not (isinstance(c[2], float) and math.isnan(c[2]))]
    assert (
        len(ran) == len(list(sidecar.glob("cases/*.json"))) == CASES_RUN[request.node.callspec.params["run"]]
    )
    assert {c[0] for c in cases} == {
        "quantize.Quantize",
        "rht.Rht",
        "gemm.Gemm",
        "linear.LinearFwdBwd",
        "contracts.CpuRoundTrip",
        "contracts.CheckpointParity",
    }
    for case, params, value, samples in cases:
        if isinstance(value, float) and math.isnan(value):
            continue  # a skip_params combination: not a case
        record_path = sidecar / "cases" / f"{case_id(case, params)}.json"
        record = json.loads(record_path.read_text())
        assert record["schema"] == "tewatch.case/1"
        assert record["case"] == case and record["params"] == params
        assert record["labels"]["backend"] == "torch-ref"
        assert record["verdict"]["status"] in STATUSES
        assert all(c["status"] in STATUSES for c in record["extra_checks"])
        # torch-ref on the CPU is the oracle CI trusts: every check must pass
        assert record["verdict"]["status"] == "pass", record
        assert value is not None and value > 0
        assert samples and len(samples) >= 5 and all(s > 0 for s in samples)
        assert min(samples) <= value <= max(samples)
        for metric in record["metrics"].values():
            assert set(metric) == {"value", "unit"} and math.isfinite(metric["value"])
        # every case: its process CPU time per call and its operators under the CPU profiler
        assert record["metrics"]["cpu_seconds"]["value"] > 0
        assert record["kernels"]["device"] == "cpu" and record["kernels"]["launches_per_call"] == 0.0


def test_derived_metrics_and_compile_parity_are_recorded(run: tuple, request: pytest.FixtureRequest) -> None:
    _, results = run
    records = [
        json.loads(p.read_text()) for p in next((results / "ci-cpu").glob("*.tewatch")).glob("cases/*")
    ]
    gemm = [r for r in records if r["case"] == "gemm.Gemm"]
    assert gemm and {"tflops", "share_of_ceiling"} <= set(gemm[0]["metrics"])
    assert gemm[0]["metrics"]["tflops"]["unit"] == "TFLOP/s"
    compiled = [r for r in records if r["case"] == "linear.LinearFwdBwd" and r["params"]["mode"] != "eager"]
    ranks = {2} if request.node.callspec.params["run"] == "spawn" else {2, 3, 4}
    assert {r["params"]["rank"] for r in compiled} == ranks
    for r in compiled:
        assert r["verdict"]["check"] == "compiled_vs_eager" and r["verdict"]["tolerance"] == 0.0
        assert r["metrics"]["compile_seconds"]["value"] > 0


def test_run_json_and_asv_output_are_kept(run: tuple, request: pytest.FixtureRequest) -> None:
    _, results = run
    sidecar = next((results / "ci-cpu").glob("*.tewatch"))
    run_json = json.loads((sidecar / "run.json").read_text())
    assert run_json["schema"] == "tewatch.run/1" and run_json["profile"] == "ci"
    assert run_json["backend_filter"] == "torch-ref" and run_json["asv_exit_code"] == 0
    assert run_json["commit"] == COMMIT and run_json["commit_source"] == "explicit"
    assert run_json["gpu"]["model"] == "cpu" and run_json["wall_seconds"] > 0
    assert run_json["versions"]["asv"] == "0.6.6" and run_json["versions"]["torch"]
    assert run_json["launch_method"] == request.node.callspec.params["run"]
    assert run_json["fork_check"] == {"safe": True, "reason": "no GPU"}
    assert not (sidecar / stderr_log_file.PLAIN_NAME).exists()
    log = stderr_log_file.read_text(sidecar)
    assert "tewatch-case: rht.Rht-" in log


def test_bad_options_fail_with_one_clear_line(project: Path, tmp_path: Path) -> None:
    proc = tewatch_run(project, tmp_path, "--profile", "nightly", "--commit", COMMIT)
    assert proc.returncode == 1
    assert "--profile must be one of full, quick, ci" in " ".join(proc.stderr.split())
    proc = tewatch_run(tmp_path, tmp_path, "--commit", COMMIT)
    assert proc.returncode == 1 and "has no asv.conf.json" in " ".join(proc.stderr.split())
    proc = tewatch_run(project, tmp_path, "--launch-method", "fork", "--commit", COMMIT)
    assert proc.returncode == 1
    assert "--launch-method must be one of spawn, forkserver" in " ".join(proc.stderr.split())


def _chunk(machine_dir: Path) -> tuple[list, list]:
    """The results files' data and the case records of a machine's folder."""
    data = [json.loads(p.read_text()) for p in machine_dir.glob("*.json") if p.name != "machine.json"]
    return data, sorted(p.read_bytes() for p in machine_dir.glob("*.tewatch/cases/*.json"))


def test_a_chunk_cut_off_by_a_time_limit_leaves_the_earlier_chunk_as_it_was(
    project: Path, inductor_cache: Path, runs: Callable, tmp_path: Path
) -> None:
    # the earlier chunk: a copy of the spawn run's results (rht, gemm, contracts, a quantize case and
    # rank-2 te.Linear), filed under COMMIT as a finished chunk is
    spawned, spawn_results = runs("spawn")
    assert spawned.returncode == 0, spawned.stderr[-3000:]
    results = tmp_path / "results"
    shutil.copytree(spawn_results, results, ignore=shutil.ignore_patterns(".inductor-cache"))
    machine_dir = results / "ci-cpu"
    before = sorted(p.name for p in machine_dir.glob("*.tewatch/cases/*.json"))
    assert len(before) == CASES_RUN["spawn"]
    earlier = _chunk(machine_dir)

    command, env = _runner(
        project, tmp_path, *ci_cpu_run(results, r"^quantize\."), inductor_cache=inductor_cache
    )
    # as `timeout --signal=INT` does: the signal goes to the runner's whole process group; the runner
    # starts with SIGINT ignored, as a shell script's background job does
    with subprocess.Popen(
        command,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
    ) as second:
        deadline = time.monotonic() + 600
        # a case of this chunk recorded (the staging folder starts with a copy of the earlier chunk's)
        staged = ".tewatch-staging-*/cases/quantize.*.json"
        while not {p.name for p in machine_dir.glob(staged)} - set(before):
            assert second.poll() is None and time.monotonic() < deadline, "no new quantize case was recorded"
            time.sleep(0.5)
        os.killpg(second.pid, signal.SIGINT)
        assert second.wait(timeout=60) != 0

    files = [p.name for p in machine_dir.glob("*.json") if p.name != "machine.json"]
    assert files == [f"{COMMIT[:8]}-existing-{files[0].split('-existing-')[1]}"]
    assert _chunk(machine_dir) == earlier
    assert not list(machine_dir.glob(".tewatch-staging-*"))
    assert sorted(p.name for p in machine_dir.glob("*.tewatch/cases/*.json")) == before
    run_json = json.loads(next(machine_dir.glob("*.tewatch/run.json")).read_text())
    assert run_json["bench_filter"] == SPAWN_SUITES

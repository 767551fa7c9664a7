"""`tewatch run --ab` for real on CPU (real `asv run`, torch-ref): base and head alternate round by round,
each side ends as one asv results file with every round's samples, its records say which samples came from
which round, and a real service pairs the rounds when the head is uploaded as a pull request."""

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import served_sqlite
from tests.runner.test_run_ci_profile import _runner

pytestmark = pytest.mark.long_setup

BENCH = r"^(rht|gemm|contracts\.CpuRoundTrip)\."
BASE, HEAD = "ab00000000000000000000000000000000000001", "ab00000000000000000000000000000000000002"


@pytest.fixture(scope="module")
def ab_run(
    project: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[subprocess.CompletedProcess, Path]:
    home, results = tmp_path_factory.mktemp("home"), tmp_path_factory.mktemp("ab")
    command, env = _runner(
        project,
        home,
        "--profile",
        "ci",
        "--backends",
        "torch-ref",
        "--bench",
        BENCH,
        "--machine",
        "ci-cpu",
        "--results-dir",
        str(results),
        "--commit",
        BASE,
        "--ab",
        "--rounds",
        "2",
        "--head-commit",
        HEAD,
        "--head-env",
        "TEWATCH_PERTURB=torchref-slow-quantize",
    )
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=900), results


def _side(results: Path, side: str) -> tuple[dict, Path]:
    [path] = [p for p in (results / side / "ci-cpu").glob("*.json") if p.name != "machine.json"]
    return json.loads(path.read_text()), path.with_suffix(".tewatch")


def test_both_sides_have_every_round_and_say_so(ab_run) -> None:
    proc, results = ab_run
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "2 rounds in" in proc.stderr
    order = re.findall(r"round \d+/2: (\w+)", proc.stderr + proc.stdout)
    assert order == ["base", "head", "head", "base"]
    sessions = set()
    for side, commit in (("base", BASE), ("head", HEAD)):
        data, sidecar = _side(results, side)
        assert data["commit_hash"] == commit
        run = json.loads((sidecar / "run.json").read_text())
        assert run["ab"]["side"] == side and run["ab"]["rounds"] == 2
        sessions.add(run["ab"]["session"])
        columns = data["result_columns"]
        for name, row in data["results"].items():
            samples = row[columns.index("samples")]
            for record_path in sidecar.glob("cases/*.json"):
                record = json.loads(record_path.read_text())
                if record["case"] == name.rsplit(".", 1)[0] and record["verdict"]["status"] == "pass":
                    sizes = record["round_sizes"]["track_seconds"]
                    if record.get("one_shot"):  # a contract check: timed in round 1 only
                        assert record["case"].startswith("contracts.") and sizes[0] > 0 and sizes[1:] == [0]
                    else:
                        assert len(sizes) == 2 and all(s > 0 for s in sizes)
                        # one-value metrics keep each round's value: the same inputs, the same error
                        rounds = record["round_values"][
                            "output_vs_fp32_rel_l2" if "Gemm" in name else "inverse_vs_input_rel_l2"
                        ]
                        assert len(rounds) == 2 and rounds[0] == rounds[1]
            assert all(s for s in samples)
    assert len(sessions) == 1


def test_the_service_pairs_the_rounds_of_a_pull_request(ab_run, tmp_path) -> None:
    proc, results = ab_run
    assert proc.returncode == 0, proc.stderr[-3000:]
    with served_sqlite(tmp_path) as (server, _):
        for side, extra in (
            ("base", ["--branch", "main"]),
            ("head", ["--branch", "pr-9", "--pr", "9", "--base", BASE]),
        ):
            done = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "tewatch",
                    "upload",
                    str(results / side),
                    "--url",
                    server.url,
                    "--token",
                    server.token,
                    *extra,
                ],
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert done.returncode == 0, done.stderr
        with server.client() as client:
            for _ in range(100):
                comparisons = client.get("/api/v1/prs/9/comparisons").json()
                if comparisons:
                    break
                time.sleep(0.2)
            names = {
                c["series_id"]: client.get(f"/api/v1/series/{c['series_id']}").json()["benchmark"]
                for c in comparisons
            }
    # rht and gemm in both rounds, their timing and their CPU time per call (one value a round); the
    # contract check in round 1 only: the single-run path
    repeated = [c for c in comparisons if c["rounds"] == 2 and c["noise_source"] == "rounds"]
    one_shot = [c for c in comparisons if c["rounds"] is None and c["noise_source"] != "rounds"]
    assert len(one_shot) == 1 and not names[one_shot[0]["series_id"]].endswith(".cpu_seconds")
    timings = [c for c in repeated if not names[c["series_id"]].endswith(".cpu_seconds")]
    assert len(timings) == 2 and len(repeated) == 4, sorted(names.values())
    # on CPU a case has one timing (no kernel time): each is its case's primary series
    assert len(comparisons) == 5 and all(c["primary"] for c in [*timings, *one_shot])

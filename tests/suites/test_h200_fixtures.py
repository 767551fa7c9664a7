"""The records kept from the lent H200 follow docs/records.md and show what TE 2.20.2 did there."""

import json
from pathlib import Path

import pytest

from tewatch.runner import results

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
STATUSES = {"pass", "fail_accuracy", "error", "unsupported", "timeout", "oom"}
RECORDS = sorted(FIXTURES.glob("h200*/**/cases/*.json"))


@pytest.mark.parametrize("path", RECORDS, ids=lambda p: p.stem)
def test_every_record_follows_the_contract(path: Path) -> None:
    record = json.loads(path.read_text())
    assert record["schema"] == "tewatch.case/1"
    assert path.stem == results.case_id(record["case"], record["params"])
    assert record["verdict"]["status"] in STATUSES
    assert set(record) >= {"labels", "extra_checks", "metrics", "gpu_state", "recorded_at"}


def _verdict(case: str, **params: object) -> dict:
    path = FIXTURES / "h200-contracts" / "cases" / f"{results.case_id(case, params)}.json"
    return json.loads(path.read_text())["verdict"]


@pytest.mark.parametrize("rank", [3, 4])
def test_nvfp4_shape_contract_breaks_for_3d_and_4d(rank: int) -> None:
    verdict = _verdict("contracts.ShapeContract", quantizer="nvfp4", rank=rank)
    assert verdict["status"] == "error" and verdict["exception_class"] == "ShapeContractMismatch"
    assert "_columnwise_data" in verdict["message"]
    assert _verdict("contracts.ShapeContract", quantizer="nvfp4", rank=2)["status"] == "pass"


def test_nvfp4_cpu_round_trip_is_a_recursion_error() -> None:
    verdict = _verdict("contracts.CpuRoundTrip", quantizer="nvfp4")
    assert verdict["status"] == "error" and verdict["exception_class"] == "RecursionError"
    assert _verdict("contracts.CpuRoundTrip", quantizer="fp8-current")["status"] == "pass"


def test_the_h200_run_has_timings_for_every_case_that_passed() -> None:
    run_dir = FIXTURES / "h200"
    benchmarks = results.load(run_dir / "benchmarks.json")
    results_file = next((run_dir / "h200").glob("f7d8c16d-*.json"))
    sidecar = results.sidecar_dir(results_file)
    run = json.loads((sidecar / "run.json").read_text())
    assert run["gpu"]["model"] == "NVIDIA H200" and run["versions"]["te"] == "2.20.2"
    seen = 0
    for case in results.iter_case_results(results.load(results_file), benchmarks):
        if case.skipped and not (sidecar / "cases" / f"{case.case_id}.json").exists():
            continue
        record = json.loads((sidecar / "cases" / f"{case.case_id}.json").read_text())
        if record["verdict"]["status"] == "pass":
            assert case.value and case.value > 0
            seen += 1
        elif record["verdict"]["status"] == "unsupported":
            assert case.skipped
    assert seen == 12

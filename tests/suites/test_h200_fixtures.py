"""The full profile run on the lent H200 (every single-GPU suite, every compile mode) follows
docs/records.md, and once uploaded the service says what TE 2.20.2 did there: the verdicts below are read
back through the API, so a change in ingest or the store that loses them fails here."""

import json
from collections import Counter
from pathlib import Path

import pytest

from tests.uploads import post_folder_run
from tewatch.runner import results

RUN_DIR = Path(__file__).resolve().parents[1] / "fixtures" / "h200-full"
RESULTS_FILE = next((RUN_DIR / "vm-h200").glob("f7d8c16d-*.json"))
COMPILE_MODES = ("default", "reduce-overhead", "max-autotune")
SIDECAR = results.sidecar_dir(RESULTS_FILE)
STATUSES = {"pass", "fail_accuracy", "error", "unsupported", "timeout", "oom"}
RECORDS = sorted((SIDECAR / "cases").glob("*.json"))


@pytest.fixture(scope="module")
def stored(in_process_app) -> dict:
    """The run uploaded to a fresh store: the upload's answer, and every latest verdict by (case, params)."""
    with in_process_app.client() as client:
        answer = post_folder_run(client, RUN_DIR)
        assert answer.status_code == 201, answer.text
        latest = client.get("/api/v1/verdicts/latest").json()
    by_case = {(v["case_name"], json.dumps(v["params"], sort_keys=True)): v for v in latest}
    return {"upload": answer.json(), "verdicts": by_case}


@pytest.fixture
def verdict(stored):
    def lookup(case: str, **params: object) -> dict:
        return stored["verdicts"][(case, json.dumps(params, sort_keys=True))]

    return lookup


@pytest.mark.parametrize("path", RECORDS, ids=lambda p: p.stem)
def test_every_record_follows_the_contract(path: Path) -> None:
    record = json.loads(path.read_text())
    assert record["schema"] == "tewatch.case/1"
    assert path.stem == results.case_id(record["case"], record["params"])
    assert record["verdict"]["status"] in STATUSES
    assert set(record) >= {"labels", "extra_checks", "metrics", "gpu_state", "recorded_at"}


@pytest.mark.parametrize("quantizer", ["nvfp4", "nvfp4-rht", "nvfp4-2d"])
@pytest.mark.parametrize("rank", [3, 4])
def test_nvfp4_shape_contract_breaks_for_3d_and_4d(verdict, quantizer: str, rank: int) -> None:
    broken = verdict("contracts.ShapeContract", quantizer=quantizer, rank=rank)
    assert broken["status"] == "error" and broken["exception_class"] == "ShapeContractMismatch"
    assert "_columnwise_data" in broken["message"]
    assert verdict("contracts.ShapeContract", quantizer=quantizer, rank=2)["status"] == "pass"


@pytest.mark.parametrize("quantizer", ["fp8-current", "fp8-block", "mxfp8"])
def test_other_quantizers_keep_their_shape_contract_at_every_rank(verdict, quantizer: str) -> None:
    for rank in (2, 3, 4):
        assert verdict("contracts.ShapeContract", quantizer=quantizer, rank=rank)["status"] == "pass"


def test_nvfp4_cpu_round_trip_is_a_recursion_error(verdict) -> None:
    broken = verdict("contracts.CpuRoundTrip", quantizer="nvfp4")
    assert broken["status"] == "error" and broken["exception_class"] == "RecursionError"
    assert verdict("contracts.CpuRoundTrip", quantizer="fp8-current")["status"] == "pass"


def test_the_emulation_matches_tes_reference_bit_for_bit_on_the_gpu(verdict) -> None:
    for variant in ("nvfp4-rht", "nvfp4-2d"):
        assert verdict("contracts.RefParity", variant=variant)["status"] == "pass"


@pytest.mark.parametrize("mode", ("eager", *COMPILE_MODES))
def test_native_nvfp4_and_mxfp8_are_gated_and_the_te_reference_breaks_on_4d_inputs(
    verdict, mode: str
) -> None:
    for rank in (2, 3, 4):
        for recipe in ("nvfp4", "mxfp8"):
            gated = verdict("linear.LinearFwdBwd", recipe=recipe, rank=rank, mode=mode)
            assert gated["status"] == "unsupported" and "10.0 or higher" in gated["reason"]
    broken = verdict("linear.LinearFwdBwd", recipe="nvfp4-ref", rank=4, mode=mode)
    assert broken["status"] == "error" and "shape '[2, 2, 4096]' is invalid" in broken["message"]
    assert verdict("linear.LinearFwdBwd", recipe="nvfp4-ref", rank=3, mode=mode)["status"] == "pass"


@pytest.mark.parametrize("mode", COMPILE_MODES)
def test_compiled_te_linear_matches_eager_bit_for_bit_in_every_mode(verdict, mode: str) -> None:
    for recipe in ("bf16", "fp8-delayed", "fp8-current", "fp8-block"):
        for rank in (2, 3, 4):
            params = {"recipe": recipe, "rank": rank, "mode": mode}
            parity = verdict("linear.LinearFwdBwd", **params)
            assert parity["status"] == "pass" and parity["metric_value"] == 0.0
            record = json.loads(
                (SIDECAR / "cases" / f"{results.case_id('linear.LinearFwdBwd', params)}.json").read_text()
            )
            assert record["metrics"]["compile_seconds"]["value"] > 0


def test_the_store_holds_every_verdict_the_records_give(stored) -> None:
    from_records = Counter(json.loads(p.read_text())["verdict"]["status"] for p in RECORDS)
    assert stored["upload"]["verdicts"] == dict(from_records)
    assert Counter(v["status"] for v in stored["verdicts"].values()) == from_records


def test_the_run_carries_the_stack_and_timings_for_every_case_that_passed() -> None:
    benchmarks = results.load(RUN_DIR / "benchmarks.json")
    run = json.loads((SIDECAR / "run.json").read_text())
    assert run["gpu"]["model"] == "NVIDIA H200" and run["gpu"]["compute_capability"] == "9.0"
    assert run["versions"]["te"] == "2.20.2" and run["versions"]["torch"].startswith("2.11")
    assert run["profile"] == "full" and run["launch_method"] == "forkserver"
    raw = results.load(RESULTS_FILE)
    samples_column = raw["result_columns"].index("samples")
    timed = 0
    for case in results.iter_case_results(raw, benchmarks):
        path = SIDECAR / "cases" / f"{case.case_id}.json"
        if not path.exists():  # a combination the suite's skip_params leaves out
            assert case.skipped
            continue
        record = json.loads(path.read_text())
        if record["verdict"]["status"] in ("pass", "fail_accuracy"):
            assert case.value and case.value > 0
            timed += 1
        elif record["verdict"]["status"] == "unsupported":
            assert case.skipped
        else:
            assert case.failed
    assert timed == 158
    rows = raw["results"].values()
    assert all(len(s) >= 10 for row in rows for s in (row[samples_column] or []) if s is not None)

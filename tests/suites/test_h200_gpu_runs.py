"""The later lent-GPU runs kept as fixtures: the quick profile (forked cases), the 2-GPU distributed
suite (eager and compiled halves, two runs), and both runs of the H200 campaign with its pull-request
report. Each run's verdict counts are also what the service answers when the run is uploaded."""

import json
from collections import Counter
from pathlib import Path

import pytest

from tests.uploads import post_folder_run
from tewatch.runner import results

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
COMMIT = "f7d8c16d14e12838378ca44617af2072e71c8508"  # sha1("transformer_engine==2.20.2")


def _run(folder: str) -> tuple[Path, dict, dict[str, dict]]:
    """(results file, run.json, records by case id) of the one run in a fixture folder."""
    results_file = next(p for p in (FIXTURES / folder).glob("*/*.json") if p.name != "machine.json")
    sidecar = results.sidecar_dir(results_file)
    records = {p.stem: json.loads(p.read_text()) for p in (sidecar / "cases").glob("*.json")}
    return results_file, json.loads((sidecar / "run.json").read_text()), records


@pytest.fixture(scope="module")
def stored_counts(in_process_app):
    """The verdict counts the service answers for a fixture folder's run, uploaded (again) to one store."""

    def upload(folder: str) -> dict[str, int]:
        with in_process_app.client() as client:
            answer = post_folder_run(client, FIXTURES / folder)
        assert answer.status_code in (200, 201), answer.text
        return answer.json()["verdicts"]

    return upload


def _verdict(records: dict[str, dict], case: str, **params: object) -> dict:
    return records[results.case_id(case, params)]["verdict"]


def test_the_quick_profile_ran_forked_cases_after_the_fork_check_passed(stored_counts) -> None:
    _, run, records = _run("h200-quick")
    assert run["launch_method"] == "forkserver" and run["fork_check"]["safe"] is True
    assert run["gpu"]["model"] == "NVIDIA H200" and run["versions"]["te"] == "2.20.2"
    statuses = Counter(r["verdict"]["status"] for r in records.values())
    assert (
        stored_counts("h200-quick")
        == statuses
        == {"pass": 91, "unsupported": 52, "error": 9, "fail_accuracy": 3}
    )


@pytest.mark.parametrize("rank", [2, 3, 4])
def test_quick_profile_gates_native_nvfp4_and_mxfp8_and_records_delayed_scaling_as_untraceable(
    rank: int,
) -> None:
    _, _, records = _run("h200-quick")
    for recipe in ("nvfp4", "mxfp8"):
        for mode in ("eager", "default"):
            verdict = _verdict(records, "linear.LinearFwdBwd", recipe=recipe, rank=rank, mode=mode)
            assert verdict["status"] == "unsupported" and "10.0 or higher" in verdict["reason"]
    verdict = _verdict(records, "contracts.ShapeContract", quantizer="fp8-delayed", rank=rank)
    assert verdict["status"] == "unsupported" and "inner_tensor_specs" in verdict["reason"]


def test_quick_profile_te_reference_linear_breaks_on_4d_inputs_eager_and_compiled() -> None:
    _, _, records = _run("h200-quick")
    for mode in ("eager", "default"):
        verdict = _verdict(records, "linear.LinearFwdBwd", recipe="nvfp4-ref", rank=4, mode=mode)
        assert verdict["status"] == "error" and "shape '[2, 2, 4096]' is invalid" in verdict["message"]
        assert (
            _verdict(records, "linear.LinearFwdBwd", recipe="nvfp4-ref", rank=3, mode=mode)["status"]
            == "pass"
        )


def test_quick_profile_compiled_te_linear_matches_eager_bit_for_bit_with_its_compile_time() -> None:
    _, _, records = _run("h200-quick")
    for recipe in ("bf16", "fp8-delayed", "fp8-current", "fp8-block"):
        for rank in (2, 3, 4):
            record = records[
                results.case_id("linear.LinearFwdBwd", {"recipe": recipe, "rank": rank, "mode": "default"})
            ]
            assert record["verdict"]["status"] == "pass" and record["verdict"]["value"] == 0.0
            assert record["metrics"]["compile_seconds"]["value"] > 0


def test_quick_profile_every_passing_case_has_samples() -> None:
    results_file, _, records = _run("h200-quick")
    benchmarks = results.load(FIXTURES / "h200-quick" / "benchmarks.json")
    timed = [
        case
        for case in results.iter_case_results(results.load(results_file), benchmarks)
        if case.case_id in records and records[case.case_id]["verdict"]["status"] == "pass"
    ]
    assert len(timed) == 91 and all(case.value and case.value > 0 for case in timed)


def test_quick_run_on_one_gpu_gates_world_size_two_and_finds_the_emulation_compiled_apart_from_eager() -> (
    None
):
    _, _, records = _run("h200-quick")
    distributed = [r for r in records.values() if r["case"] == "distributed.LinearTensorParallel"]
    for record in distributed:
        if record["params"]["world_size"] == 2:
            reason = record["verdict"]["reason"]
            assert record["verdict"]["status"] == "unsupported"
            assert "2 GPUs; 1 visible" in reason or (
                record["params"]["recipe"] == "nvfp4" and "10.0" in reason
            )
    verdict = _verdict(
        records,
        "distributed.LinearTensorParallel",
        recipe="torch-ref",
        world_size=1,
        parallel="column",
        sequence_parallel=False,
        mode="default",
    )
    assert verdict["status"] == "fail_accuracy" and verdict["check"] == "compiled_vs_eager"
    assert "wgrad" in verdict["message"]


def test_two_gpu_run_eager_cases_pass_against_one_gpu_and_native_nvfp4_is_gated(stored_counts) -> None:
    _, run, records = _run("h200x2-distributed")
    assert run["gpu"]["count"] == 2 and run["commit"] == COMMIT
    statuses = Counter(r["verdict"]["status"] for r in records.values())
    assert stored_counts("h200x2-distributed") == statuses == {"pass": 15, "unsupported": 5}
    for record in records.values():
        labels = record["labels"]
        assert labels["mode"] == "eager"
        if labels["world_size"] == 2:
            assert labels["interconnect"] == "NV18"  # nvidia-smi topo -m between the two H200s
        if labels["recipe"] == "nvfp4":
            assert record["verdict"]["status"] == "unsupported"
    assert {r["labels"]["world_size"] for r in records.values()} == {1, 2}


def test_two_gpu_run_compiled_cases_match_eager_bit_for_bit_and_one_gpu_within_tolerance(
    stored_counts,
) -> None:
    _, run, records = _run("h200x2-distributed-compiled")
    assert run["gpu"]["count"] == 2 and run["commit"] == COMMIT and run["launch_method"] == "forkserver"
    statuses = Counter(r["verdict"]["status"] for r in records.values())
    assert stored_counts("h200x2-distributed-compiled") == statuses == {"pass": 15, "unsupported": 5}
    for record in records.values():
        assert record["labels"]["mode"] == "default"
        if record["verdict"]["status"] != "pass":
            assert record["labels"]["recipe"] == "nvfp4"
            continue
        assert record["verdict"]["check"] == "compiled_vs_eager" and record["verdict"]["value"] == 0.0
        assert record["metrics"]["compile_seconds"]["value"] > 0
        if record["labels"]["world_size"] == 2:
            checks = {c["check"]: c for c in record["extra_checks"]}
            assert {"output_vs_single_gpu", "dgrad_vs_single_gpu", "wgrad_vs_single_gpu"} <= set(checks)
            assert all(c["status"] == "pass" and c["value"] <= c["tolerance"] for c in checks.values())


def test_campaign_head_breaks_fp8_current_contract_only_where_the_perturbation_does() -> None:
    _, run, records = _run("h200-campaign/head-results")
    assert run["commit"] != COMMIT
    for rank, status in ((2, "pass"), (3, "error"), (4, "error")):
        verdict = _verdict(records, "contracts.ShapeContract", quantizer="fp8-current", rank=rank)
        assert verdict["status"] == status
        if status == "error":
            assert (
                verdict["exception_class"] == "ShapeContractMismatch" and "_transpose" in verdict["message"]
            )


def test_campaign_base_is_a_whole_quick_profile_run_forked(stored_counts) -> None:
    _, run, records = _run("h200-campaign/base-results")
    assert run["profile"] == "quick" and run["bench_filter"] is None and run["commit"] == COMMIT
    assert run["launch_method"] == "forkserver"
    statuses = Counter(r["verdict"]["status"] for r in records.values())
    expected = {"pass": 84, "unsupported": 46, "error": 9, "fail_accuracy": 2}
    assert stored_counts("h200-campaign/base-results") == statuses == expected


def test_campaign_pr_report_lists_the_two_correctness_failures_first_and_was_signed() -> None:
    report = (FIXTURES / "h200-campaign" / "pr-report.md").read_text()
    assert report.index("### Correctness") < report.index("### Largest regressions")
    correctness = report[report.index("### Correctness") : report.index("### Largest regressions")]
    assert correctness.count("ShapeContract(quantizer=fp8-current, rank=") == 2
    assert "### Improvements" not in report
    webhook = json.loads((FIXTURES / "h200-campaign" / "pr-report-webhook.json").read_text())
    assert webhook["event"] == "pr.report" and webhook["signature_valid"] is True
    assert webhook["body"]["data"]["correctness_failures"] == 2
    assert webhook["body"]["data"]["counts"] == {"regression": 11, "inconclusive": 116}


def test_the_general_checks_on_the_h200_find_two_te_failures_beyond_the_seed_bugs() -> None:
    _, _, records = _run("h200-checks")
    for recipe in ("bf16", "fp8-delayed", "fp8-current", "fp8-block"):
        layer = _verdict(records, "checks.CompiledLayer", recipe=recipe, layer="TransformerLayer")
        assert layer["status"] == "error" and "get_attention_backend" in layer["message"]
        mlp = records[results.case_id("checks.CompiledLayer", {"recipe": recipe, "layer": "LayerNormMLP"})]
        assert mlp["verdict"]["status"] == "pass" and mlp["verdict"]["value"] == 0.0
        assert [c["status"] for c in mlp["extra_checks"]] == ["pass"]
    dcp = _verdict(records, "checks.DcpRoundTrip", recipe="fp8-delayed")
    assert dcp["status"] == "error" and "Size mismatch" in dcp["message"] and "_extra_state" in dcp["message"]
    for recipe in ("fp8-current", "fp8-block"):
        assert _verdict(records, "checks.DcpRoundTrip", recipe=recipe)["status"] == "pass"
    cpu = _verdict(records, "checks.CpuOps", quantizer="nvfp4")
    assert cpu["status"] == "error" and "recursion" in cpu["message"]
    for quantizer in (
        "fp8-delayed",
        "fp8-current",
        "fp8-block",
        "torch-ref",
        "torch-ref-rht",
        "torch-ref-2d",
    ):
        assert _verdict(records, "checks.Determinism", quantizer=quantizer)["status"] == "pass"

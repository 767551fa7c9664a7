"""The suites' memory and error metrics: the arithmetic on CPU tensors, a case run in process on the CPU
(error metrics, no memory: that needs CUDA), and what the kept H200 runs recorded."""

from __future__ import annotations

import json
import math

import pytest
import torch

from benchmarks.harness import memory, records
from benchmarks.harness.numerics import SQNR_EQUAL_DB, error_metrics, scale_health
from tests.detect.h200_memnum import campaign_records, one_value_metrics


def test_a_straight_line_of_bytes_fits_its_slope_exactly_and_a_wobble_has_an_error() -> None:
    straight = memory.fit_slope([100.0 + 2**20 * i for i in range(8)])
    assert straight.bytes_per_step == 2**20 and straight.stderr == 0.0
    flat = memory.fit_slope([5.0] * 10)
    assert flat.bytes_per_step == 0.0 and flat.stderr == 0.0
    wobble = memory.fit_slope([0.0, 512.0, 0.0, 512.0, 0.0, 512.0])
    assert wobble.stderr > 0 and abs(wobble.bytes_per_step) < 4 * wobble.stderr
    with pytest.raises(ValueError, match="3 or more"):
        memory.fit_slope([1.0, 2.0])


def test_steps_fill_their_budget_between_the_bounds() -> None:
    assert memory.step_count(1e-4) == memory.STEPS_MAX
    assert memory.step_count(0.4) == memory.STEPS_MIN
    assert memory.step_count(0.02) == 12
    assert memory.step_count(0.0) == memory.STEPS_MAX


def test_error_metrics_of_a_known_difference_and_of_an_equal_result() -> None:
    found = error_metrics(torch.tensor([3.0, 4.5]), torch.tensor([3.0, 4.0]))
    assert found["max_abs"] == 0.5
    assert math.isclose(found["rel_l2"], 0.1)
    assert math.isclose(found["sqnr_db"], 20.0)
    same = error_metrics(torch.ones(4, dtype=torch.bfloat16), torch.ones(4))
    assert same == {"max_abs": 0.0, "rel_l2": 0.0, "sqnr_db": SQNR_EQUAL_DB}


def test_a_nan_where_the_reference_has_none_is_left_out_and_named() -> None:
    record = records.CaseRecord(case="quantize.Quantize", params={}, labels={})
    record.errors("dequantized_vs_input", error_metrics(torch.tensor([float("nan"), 1.0]), torch.ones(2)))
    assert "dequantized_vs_input_max_abs" not in record.metrics
    assert "dequantized_vs_input_max_abs is nan" in record.notes
    good = records.CaseRecord(case="gemm.Gemm", params={}, labels={})
    good.errors("output_vs_fp32", {"max_abs": 1.0, "rel_l2": 0.01, "sqnr_db": 40.0})
    assert {n: m["unit"] for n, m in good.metrics.items()} == {
        "output_vs_fp32_max_abs": "abs error",
        "output_vs_fp32_rel_l2": "rel error",
        "output_vs_fp32_sqnr_db": "dB",
    }


def test_scale_health_counts_saturated_subnormal_and_zero_block_scales() -> None:
    scales = torch.tensor([448.0, 0.0, 2.0**-7, 1.0]).to(torch.float8_e4m3fn)
    assert scale_health(scales) == {
        "scale_saturated_share": 0.25,
        "scale_subnormal_share": 0.25,
        "scale_zero_share": 0.25,
    }
    assert scale_health(scales.view(torch.uint8)) == scale_health(scales)


def test_a_cpu_case_records_its_error_metrics_and_no_memory(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("TEWATCH_PROFILE", "ci")
    monkeypatch.setenv(records.RECORD_DIR_ENV, str(tmp_path))
    from benchmarks.quantize import Quantize

    params = ("torch-ref", "nvfp4-row", "128x256")
    case = Quantize()
    case.setup(*params)
    case.track_seconds(*params)
    [path] = (tmp_path / "cases").glob("*.json")
    metrics = json.loads(path.read_text())["metrics"]
    assert metrics["dequantized_vs_input_rel_l2"]["unit"] == "rel error"
    assert 0.05 < metrics["dequantized_vs_input_rel_l2"]["value"] < 0.15
    assert metrics["scale_zero_share"]["value"] == 0.0
    # one block holds the global amax, and NVFP4's two-level scaling sets its scale to E4M3's largest
    assert metrics["scale_saturated_share"]["value"] == 1 / (128 * 256 // 16)
    assert not any(name.endswith("bytes") for name in metrics)


def test_the_h200_runs_recorded_memory_for_every_gpu_case_and_a_leak_slope_for_every_step() -> None:
    base = campaign_records("base")
    timed_on_gpu = [r for r in base.values() if "kernel_seconds" in r["metrics"]]
    assert len(timed_on_gpu) == 28
    for record in timed_on_gpu:
        metrics = one_value_metrics(record)
        assert {"setup_allocated_bytes", "peak_allocated_bytes", "peak_reserved_bytes"} <= set(metrics)
        assert metrics["peak_reserved_bytes"][0] >= metrics["peak_allocated_bytes"][0]
        steps = record["case"] in ("linear.LinearFwdBwd", "offload.CpuOffload")
        assert ("leak_bytes_per_step" in metrics) == steps
    offload = base[("offload.CpuOffload", '{"recipe": "bf16"}')]["metrics"]
    # four layers, three of them marked for offload: TE 2.20.2 keeps half the bytes on the GPU
    assert offload["offload_saving"]["value"] == 0.5
    assert offload["activation_bytes"]["value"] == 256 * 2**20

"""Host and compile cost on the CPU: the timed-output check, cpu_seconds, graph breaks, and the perturbations
of issue-class host and compile changes (host delay, graph break, kernel split), each moving its figure."""

import json
import statistics

import pytest
import torch

from benchmarks import nvfp4_emulation as emu
from benchmarks.harness import emulated_linear, kernels, perturb, records
from benchmarks.harness.compile_cost import CompileCost
from benchmarks.harness.timed_output import OutputCheck, Watched
from benchmarks.harness.timing import process_cpu_samples


def run_watched(fn, check: OutputCheck, calls: int = 5) -> records.Check:
    watched = Watched(fn, check)
    for _ in range(calls):
        watched()
    return watched.verdict()


def test_a_call_that_writes_its_buffer_every_time_passes_and_one_that_skips_fails() -> None:
    x = torch.randn(64, 32)
    out = torch.empty(64, 32)

    def writes() -> torch.Tensor:
        torch.mul(x, 2, out=out)
        return out

    assert run_watched(writes, OutputCheck()).status == "pass"
    calls = {"n": 0}

    def skips_after_the_first() -> torch.Tensor:
        calls["n"] += 1
        if calls["n"] == 1:
            torch.mul(x, 2, out=out)
        return out  # a fast path that keeps the first result: the poison stays

    verdict = run_watched(skips_after_the_first, OutputCheck())
    assert verdict.status == "fail_accuracy" and verdict.value == 1.0 and verdict.check == "timed_output"


def test_a_cached_first_result_fails_and_fresh_equal_results_pass() -> None:
    x = torch.randn(64, 32)
    assert run_watched(lambda: {"y": x * 2, "n": (x.sum(),)}, OutputCheck()).status == "pass"
    cached: list = []

    def cache() -> torch.Tensor:
        if not cached:
            cached.append(x * 2)
        return cached[0]

    assert run_watched(cache, OutputCheck()).status == "fail_accuracy"
    ints = torch.arange(16, dtype=torch.int32)
    assert run_watched(lambda: ints, OutputCheck()).status == "fail_accuracy"  # an input returned: poisoned


def test_a_stochastic_output_passes_within_its_tolerance_and_fails_beyond_it() -> None:
    torch.manual_seed(0)
    x = torch.randn(256)
    noisy = OutputCheck(tolerance=0.2)
    assert run_watched(lambda: x + 0.01 * torch.randn(256), noisy).status == "pass"
    verdict = run_watched(lambda: x + torch.randn(256), noisy)
    assert verdict.status == "fail_accuracy" and verdict.metric == "rel_l2"
    dequantized = OutputCheck(tolerance=0.0, comparable=lambda q: q.float() / 2)
    assert run_watched(lambda: (x * 2).to(torch.bfloat16), dequantized).status == "pass"


def test_cpu_seconds_count_the_process_cpu_time_of_each_call() -> None:
    spin = lambda: perturb._HostClock.delay(2e-3)  # noqa: E731
    samples = process_cpu_samples(spin, 5)
    assert len(samples) == 5
    assert (
        1e-3 < statistics.median(samples) < 20e-3
    )  # a busy wait is CPU time; a loaded host takes some of it


def test_host_delay_adds_its_30_us_of_cpu_time_to_every_eager_forward(monkeypatch) -> None:
    monkeypatch.setattr(emulated_linear.EmulatedNVFP4Linear, "forward", lambda self, x: x @ self.weight.t())
    module = emulated_linear.EmulatedNVFP4Linear(64, 64, "cpu", torch.float32)
    x = torch.randn(16, 64)
    plain = module.forward
    perturb.TORCH_REF["host-delay-30us"](emu)
    delayed = module.forward
    perturb.touched.clear()
    # paired, interleaved calls: a busy neighbour slows both alike
    differences = [
        process_cpu_samples(lambda: delayed(x), 1)[0] - process_cpu_samples(lambda: plain(x), 1)[0]
        for _ in range(200)
    ]
    assert perturb.touched["host-delay-30us"] == 200
    assert 20e-6 < statistics.median(differences) < 60e-6


def test_a_graph_break_in_the_compiled_linear_forward_adds_to_the_count(monkeypatch) -> None:
    monkeypatch.setattr(emulated_linear.EmulatedNVFP4Linear, "forward", lambda self, x: x @ self.weight.t())
    module = emulated_linear.EmulatedNVFP4Linear(32, 32, "cpu", torch.float32)
    x = torch.randn(16, 32)

    def compiled_breaks() -> float:
        cost = CompileCost("cpu")
        forward = torch.compile(lambda inp: module(inp).relu() * 2, backend="eager")
        with cost.first_call():
            forward(x)
        record = records.CaseRecord(case="linear.LinearFwdBwd", params={}, labels={})
        cost.write(record)
        assert record.metrics["compile_seconds"]["value"] > 0
        return record.metrics["graph_breaks"]["value"]

    assert compiled_breaks() == 0
    perturb.TORCH_REF["graph-break-linear"](emu)
    # Dynamo counts a break inside an inlined call twice: where the caller's graph stops, and again in
    # the call's own frame, traced after the restart
    assert compiled_breaks() == 2
    [reason] = CompileCost.graph_breaks()
    assert "graph_break()" in reason


def test_the_kernel_split_doubles_the_quantizes_operators_and_keeps_its_bytes(monkeypatch) -> None:
    monkeypatch.setattr(emu, "quantize_nvfp4", emu.quantize_nvfp4)
    x = torch.randn(2, 64, 256, dtype=torch.bfloat16)
    whole = emu.quantize_nvfp4(x, block_2d=True)
    before = kernels.profile_cpu(lambda: emu.quantize_nvfp4(x), calls=2)
    perturb.TORCH_REF["kernel-split"](emu)
    split = emu.quantize_nvfp4(x, block_2d=True)
    assert torch.equal(split.data, whole.data) and torch.equal(split.global_amax, whole.global_amax)
    assert torch.equal(split.scales.view(torch.uint8), whole.scales.view(torch.uint8))
    after = kernels.profile_cpu(lambda: emu.quantize_nvfp4(x), calls=2)
    assert before is not None and after is not None
    calls_before = {r["name"]: r["calls_per_call"] for r in before["table"]}
    calls_after = {r["name"]: r["calls_per_call"] for r in after["table"]}
    assert calls_after["aten::mul"] >= 2 * calls_before["aten::mul"]
    assert calls_after.get("aten::cat", 0) >= calls_before.get("aten::cat", 0) + 2
    # stochastic rounding and the RHT path stay whole
    assert emu.quantize_nvfp4(x, rht=True).data.shape == whole.data.shape


def test_the_te_perturbations_of_host_and_compile_cost_are_known_by_name(monkeypatch) -> None:
    for name in ("host-sync-per-call", "host-delay-30us", "graph-break-linear"):
        assert name in perturb.TE
    for name in ("kernel-split", "host-delay-30us", "graph-break-linear"):
        assert name in perturb.TORCH_REF
    monkeypatch.setenv(perturb.ENV, "host-sync-per-call,kernel-split")
    assert perturb.requested() == {"host-sync-per-call", "kernel-split"}


@pytest.fixture
def ci_case(monkeypatch, tmp_path):
    monkeypatch.setenv("TEWATCH_PROFILE", "ci")
    monkeypatch.setenv(records.RECORD_DIR_ENV, str(tmp_path))

    def run(cls, *params):
        case = cls()
        case.setup(*params)
        case.track_seconds(*params)
        [path] = (tmp_path / "cases").glob("*.json")
        return json.loads(path.read_text())

    return run


def test_a_cpu_case_records_its_operators_its_cpu_time_and_its_timed_output(ci_case) -> None:
    from benchmarks.rht import Rht

    record = ci_case(Rht, "torch-ref", "128x256")
    metrics = record["metrics"]
    assert metrics["cpu_seconds"]["unit"] == "seconds" and metrics["cpu_seconds"]["value"] > 0
    assert {metrics[n]["value"] for n in ("launches_per_call", "syncs_per_call", "copies_per_call")} == {0.0}
    assert metrics["launches_per_call"]["unit"] == "count"
    table = record["kernels"]
    assert table["device"] == "cpu" and 2 <= table["profiled_calls"] <= kernels.CPU_PROFILED_CALLS
    assert table["table"] and all(row["name"].startswith("aten::") for row in table["table"])
    checks = {c["check"]: c for c in [record["verdict"], *record["extra_checks"]]}
    assert checks["timed_output"]["status"] == "pass" and checks["timed_output"]["details"]["calls"] >= 5


def test_a_fast_path_that_skips_its_work_after_the_first_call_fails_the_timed_output(
    ci_case, monkeypatch
) -> None:
    original = emu.apply_rht
    kept: dict = {}

    def fast_path(x, *args, **kwargs):  # the first result for an input it has seen
        key = (id(x), repr(args), repr(sorted(kwargs.items())))
        if key not in kept:
            kept[key] = original(x, *args, **kwargs)
        return kept[key]

    monkeypatch.setattr(emu, "apply_rht", fast_path)
    from benchmarks.rht import Rht

    record = ci_case(Rht, "torch-ref", "128x256")
    assert record["verdict"]["check"] == "timed_output" and record["verdict"]["status"] == "fail_accuracy"

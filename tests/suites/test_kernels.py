"""The kernel table: the rules on rows shaped like Kineto's (CUDA), and real torch.profiler passes on the CPU."""

import pytest
import torch
from torch.autograd import DeviceType

from benchmarks.harness import kernels
from benchmarks.harness.kernels import Activity

FILL = (
    "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<int>, "
    "at::detail::Array<char*, 1> >(int, at::native::FillFunctor<int>, at::detail::Array<char*, 1>)"
)
GEMM = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas"
CAST = "void transformer_engine::detail::cast_kernel<4, __nv_bfloat16, __nv_fp8_e4m3>(float const*)"
AMAX = "triton_red_fused_abs_amax_0"
D2H = "Memcpy DtoH (Device -> Pageable)"


class KinetoEvent:
    """What `prof.profiler.kineto_results.events()` yields, with the methods the suites read."""

    def __init__(self, start: int, duration: int, name: str, device: DeviceType) -> None:
        self._start, self._duration, self._name, self._device = start, duration, name, device

    def start_ns(self) -> int:
        return self._start

    def duration_ns(self) -> int:
        return self._duration

    def name(self) -> str:
        return self._name

    def device_type(self) -> DeviceType:
        return self._device


class Profile:
    def __init__(self, events: list[KinetoEvent]) -> None:
        self.profiler = type("P", (), {"kineto_results": type("R", (), {"events": lambda _: events})()})()


def host(start: int, name: str) -> KinetoEvent:
    return KinetoEvent(start, 2, name, DeviceType.CPU)


def device(start: int, duration: int, name: str) -> KinetoEvent:
    return KinetoEvent(start, duration, name, DeviceType.CUDA)


def two_calls() -> list[KinetoEvent]:
    """Boundary, call (cast, gemm, and a second cast variant; an amax read back with .item()), boundary,
    the same call with a cuBLAS tile picked differently, boundary, the final synchronisation."""
    events = []
    t = 0
    for tile in ("128x128x64", "256x128x64"):
        events += [host(t, "cudaLaunchKernel"), device(t + 5, 40, FILL)]
        events += [host(t + 50, "cudaLaunchKernel"), device(t + 55, 10, CAST)]
        events += [host(t + 60, "cuLaunchKernel"), device(t + 66, 4, AMAX)]
        events += [
            host(t + 70, "cudaMemcpyAsync"),
            device(t + 72, 1, D2H),
            host(t + 73, "cudaStreamSynchronize_ptsz"),
        ]
        events += [
            host(t + 80, "cudaLaunchKernelExC_v11060"),
            device(t + 85, 100, GEMM.replace("128x128x64", tile)),
        ]
        events += [host(t + 90, "cudaLaunchKernel"), device(t + 190, 6, CAST.replace("<4,", "<8,"))]
        events.append(KinetoEvent(t + 95, 3, "aten::mm", DeviceType.CPU))  # no API call: left out
        t += 300
    events += [host(t, "cudaLaunchKernel"), device(t + 5, 40, FILL), host(t + 50, "cudaDeviceSynchronize")]
    return events


def boundary_alone() -> list[KinetoEvent]:
    return [host(0, "cudaLaunchKernel"), device(5, 40, FILL), host(50, "cudaDeviceSynchronize")]


def test_kineto_events_become_device_activities_and_api_calls_in_start_order() -> None:
    found = kernels.kineto_activities(Profile(list(reversed(two_calls()))))
    assert [a.start_ns for a in found] == sorted(a.start_ns for a in found)
    assert "aten::mm" not in {a.name for a in found}
    assert {a.name for a in found if not a.on_device} == {
        "cudaLaunchKernel",
        "cuLaunchKernel",
        "cudaLaunchKernelExC_v11060",
        "cudaMemcpyAsync",
        "cudaStreamSynchronize_ptsz",
        "cudaDeviceSynchronize",
    }


def test_a_cuda_pass_gives_the_table_launches_syncs_and_copies_per_call() -> None:
    activities = kernels.kineto_activities(Profile(two_calls()))
    alone = kernels.kineto_activities(Profile(boundary_alone()))
    boundary = {a.name for a in alone if a.on_device}
    split = kernels.split_calls(activities, boundary, 2)
    assert kernels.per_call_seconds(split) == pytest.approx([121e-9, 121e-9])
    table = kernels.cuda_table(split, kernels.host_counts(activities), kernels.host_counts(alone))
    assert table["device"] == "cuda" and table["profiled_calls"] == 2
    # 4 launches a call (three runtime launches, one driver launch): the boundaries' three are left out
    assert table["launches_per_call"] == 4.0
    assert table["syncs_per_call"] == 1.0  # the .item()'s stream synchronisation; the final one is left out
    assert table["copies_per_call"] == 1.0
    rows = {row["name"]: row for row in table["table"]}
    assert (
        next(iter(rows))
        == "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesizeNxNxN_warpgroupsizeNxNxN_execute_segment_k_off_kernel__5x_cublas"
    )
    gemm = next(iter(rows.values()))
    assert gemm["calls_per_call"] == 1.0 and gemm["total_seconds"] == pytest.approx(
        100e-9
    )  # two tiles, one name
    cast = rows["transformer_engine::detail::cast_kernel<N, __nv_bfloat16, __nv_fp8_e4m3>"]
    assert cast["calls_per_call"] == 2.0
    assert cast["total_seconds"] == pytest.approx(16e-9) and cast["mean_seconds"] == pytest.approx(8e-9)
    assert rows["triton_red_fused_abs_amax"]["calls_per_call"] == 1.0
    assert rows[D2H]["total_seconds"] == pytest.approx(1e-9)
    assert [r["total_seconds"] for r in table["table"]] == sorted(
        (r["total_seconds"] for r in table["table"]), reverse=True
    )


def test_calls_the_boundaries_do_not_split_give_no_table() -> None:
    fill = "fill<int>"
    record = [Activity(0, 50, fill, True), Activity(60, 10, "gemm", True), Activity(75, 5, "cast", True)]
    record += [Activity(90, 50, fill, True), Activity(150, 12, "gemm", True), Activity(170, 50, fill, True)]
    assert kernels.per_call_seconds(kernels.split_calls(record, {fill}, 2)) == pytest.approx([15e-9, 12e-9])
    # a call that itself ran the boundary's kernel splits the record: nothing rather than a wrong split
    inner = [Activity(0, 50, fill, True), Activity(60, 10, "gemm", True), Activity(80, 5, fill, True)]
    inner += [Activity(90, 5, "cast", True), Activity(100, 50, fill, True)]
    assert kernels.split_calls(inner, {fill}, 1) == []
    assert kernels.split_calls(record[:-1], {fill}, 2) == []


def test_past_max_rows_the_smallest_kernels_are_summed_into_one_row() -> None:
    per_name = {f"k{i:03d}": [float(i)] for i in range(kernels.MAX_ROWS + 10)}
    rows = kernels.table_rows(per_name, 1)
    assert len(rows) == kernels.MAX_ROWS
    other = rows[-1]
    assert other["name"] == kernels.OTHER and other["calls_per_call"] == 11
    assert sum(r["total_seconds"] for r in rows) == pytest.approx(sum(range(kernels.MAX_ROWS + 10)))


def test_profiler_calls_fit_the_budget_within_bounds() -> None:
    assert kernels.cpu_profile_call_count(1e-4, 0.1) == kernels.CPU_PROFILED_CALLS
    assert kernels.cpu_profile_call_count(0.04, 0.1) == kernels.CPU_PROFILE_MIN_CALLS
    assert kernels.cpu_profile_call_count(0.0, 0.1) == kernels.CPU_PROFILED_CALLS


def test_a_real_cpu_profile_lists_the_top_level_aten_operators_of_a_call() -> None:
    torch.manual_seed(0)
    x = torch.randn(16, 32)
    layer = torch.nn.Linear(32, 8)

    def step() -> None:
        y = torch.nn.functional.linear(x, layer.weight, layer.bias)
        (y * 2).sum().backward()

    table = kernels.profile_cpu(step, calls=3)
    assert table is not None
    assert table["device"] == "cpu" and table["profiled_calls"] == 3
    assert table["launches_per_call"] == table["syncs_per_call"] == table["copies_per_call"] == 0.0
    rows = {row["name"]: row for row in table["table"]}
    assert rows["aten::linear"]["calls_per_call"] == 1.0
    assert rows["aten::sum"]["calls_per_call"] >= 1.0
    assert "aten::addmm" not in rows  # inside aten::linear, not top level
    # the backward's operators, below the autograd engine's frames, are the call's too
    assert rows["aten::mul"]["calls_per_call"] >= 2.0
    for row in rows.values():
        assert row["total_seconds"] == pytest.approx(row["calls_per_call"] * row["mean_seconds"])
        assert row["mean_seconds"] > 0


def test_operators_nest_by_their_intervals_on_their_thread() -> None:
    rows = [
        ("aten::zeros", 0, 5, 1),
        (kernels.CALL_MARKER, 10, 100, 1),
        ("aten::mul", 10, 30, 1),  # starts with the marker: inside it
        ("aten::empty", 12, 14, 1),
        ("aten::add", 40, 50, 2),  # another thread, at the same time: not the marker's
        ("autograd::engine::evaluate_function: MulBackward0", 60, 90, 1),
        ("aten::mul", 62, 70, 1),
    ]
    ops = kernels.nested_ops(rows)
    by_name = [(op.name, ops[op.parent].name if op.parent is not None else None) for op in ops]
    assert by_name == [
        ("aten::zeros", None),
        (kernels.CALL_MARKER, None),
        ("aten::mul", kernels.CALL_MARKER),
        ("aten::empty", "aten::mul"),
        ("autograd::engine::evaluate_function: MulBackward0", kernels.CALL_MARKER),
        ("aten::mul", "autograd::engine::evaluate_function: MulBackward0"),
        ("aten::add", None),
    ]
    calls, per_name = kernels.top_level_ops(ops)
    assert calls == 1 and dict(per_name) == {"aten::mul": [20e-9, 8e-9]}


def test_operators_outside_a_call_are_not_the_calls() -> None:
    ops = [
        kernels.CpuOp("aten::zeros", 5.0, None),
        kernels.CpuOp(kernels.CALL_MARKER, 100.0, None),
        kernels.CpuOp("aten::mul", 10.0, 1),
        kernels.CpuOp("aten::empty", 1.0, 2),
        kernels.CpuOp("autograd::engine::evaluate_function: MulBackward0", 20.0, 1),
        kernels.CpuOp("aten::mul", 8.0, 4),
    ]
    calls, per_name = kernels.top_level_ops(ops)
    assert calls == 1 and dict(per_name) == {"aten::mul": [10e-6, 8e-6]}
    assert kernels.cpu_table(ops[:1]) is None

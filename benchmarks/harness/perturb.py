"""Deliberate, documented changes a campaign applies to the stack under test (TEWATCH_PERTURB).

A campaign runs the suites twice, the second time with some of these applied at import time, and
expects the service to flag exactly what they break. Each one imitates a real class of TE bug:

- `torchref-slow-quantize` (performance): torch-ref's quantize does its work four times (redundant
  passes, like casts that are no longer fused) on every backend that uses torch-ref. On a CPU at CI
  sizes a process's level moves by up to 70 % (the same quantize took 380 us in one process, 650 us in
  another), which a doubling does not always stand out of.
- `torchref-rank3-dequantize` (correctness): torch-ref's dequantize of a 3D or 4D tensor swaps its two
  leading dimensions' data, the kind of layout mix-up that only appears above rank 2.
- `torchref-nondeterministic`, `torchref-odd-shape-silent`, `torchref-compile-eval-path` (correctness):
  each breaks exactly the property one of the general checks (benchmarks/checks.py) looks at: every
  second quantize flips a bit; a last dimension off the 16 grid is padded and quantized silently; the
  compiled emulated te.Linear skips quantization in eval mode.
- `torchref-compile-stale-weight` (correctness): compiled in training mode, the emulated te.LayerNormMLP's linears keep
  the weight values they were built with, so a layer compiled whole (`checks.CompiledLayer`) misses an update of its
  weights; a te.Linear on its own is left alone, so the compile sequences' graphs stay those of the unperturbed code.
- `torchref-fsdp-stale-load` (correctness): the emulated Linear, sharded with FSDP2, puts a copy of its
  weight shard in its state dict and ignores the state dict it is loaded with, so a load through DCP
  fills the copy, reports success and leaves the module's own values (TE bug zoo #12: DCP loading broken
  for FSDP2 with weights quantized at init): what `distributed.FsdpCheckpoint` looks for.
- `fp8-current-stale-nd-update` (correctness): Float8CurrentScalingQuantizer.update_quantized leaves a
  tensor of rank 3 or more as it was: what the N-D update check (`checks.NdUpdate`) looks for on a GPU.
- `te-ref-extra-sync` (performance): TE's NVFP4QuantizerRef.quantize synchronises the device and copies
  its input first. On an H200 this stayed inside run-to-run noise (the reference quantize is a 3-8 ms
  pure-PyTorch pipeline): a change too small to flag, kept as such.
- `te-ref-slow-quantize` (performance): NVFP4QuantizerRef.quantize does its work twice, the GPU
  counterpart of `torchref-slow-quantize` (on an H200 quantize levels move by 0.2 % between runs).
- `fp8-current-collapsed-transpose` (correctness): Float8CurrentScalingQuantizer predicts a 2D
  `_transpose` buffer for tracing at rank >= 3 while the kernel allocates it N-D: the shape-contract
  mismatch of NVFP4 (TE issue #3626), moved to FP8 current scaling, so it shows on Hopper too.

Changes of a chosen size, the smallest a pull request should still be told about (each call takes that
share longer: a delay on the device after the call, sized from the call's own time measured in the
process, the way a kernel that does more work would):

- `gemm-slower-5`: TE's general_gemm as the GEMM suite calls it, +5 %.
- `te-ref-quantize-slower-6`: NVFP4QuantizerRef.quantize, +6 % (also inside te.Linear's NVFP4 reference
  recipe).
- `te-ref-rht-slower-12`: NVFP4QuantizerRef._apply_rht, +12 % (also inside the reference quantize with RHT).
- `fp8-current-extra-pass` (not a delay): Float8CurrentScalingQuantizer reads its input once more for its
  amax before quantizing, a redundant pass (quantize suite and te.Linear with FP8 current scaling).

Memory (each a change in bytes the memory metrics of docs/records.md should show, at its size):

- `linear-leak-1mib`: te.Linear's forward keeps a 1 MiB tensor of every eager call for good (a saved
  tensor, or a cache keyed by step, that is never released): te.Linear's `leak_bytes_per_step` becomes
  1 MiB, its steady state climbs with the number of steps run.
- `gemm-extra-workspace-64mib`: TE's general_gemm, as the GEMM suite calls it, allocates a second 64 MiB
  workspace at its first call and keeps it (a workspace allocated per call site instead of shared): the
  GEMM cases' setup and peak bytes grow by 64 MiB.
- `fp8-current-cache-twice`: Float8CurrentScalingQuantizer keeps a copy of the buffers of the tensor it
  last produced (a cache kept twice): the quantize suite's FP8 current cases and te.Linear with FP8
  current scaling hold one quantized copy more, as large as the FP8 data and its transpose.

Numerics:

- `fp8-current-shift-1pct`: Float8CurrentScalingQuantizer quantizes its input multiplied by 1.01, so
  every FP8 current-scaling result moves by 1 % (te.Linear's output by about 2 %: both operands), well
  inside the checks' tolerances: the verdicts stay `pass`, the error metrics move (the quantize suite's
  relative L2 error against its input from about 0.026 to about 0.028, tolerance 0.04). The multiply
  is one more elementwise pass, so those calls also take a little longer.

Host and compile cost (each a change the kernel table or the host's figures of docs/records.md should
show, "Kernels and host cost"):

- `host-sync-per-call` (GPU): te.Linear's forward synchronises the device after its work
  (`torch.cuda.synchronize()`), the host waiting where it used to run ahead: `syncs_per_call` +1 per
  forward on every eager te.Linear case, and the host's share of the time grows.
- `kernel-split`: torch-ref's NVFP4 quantize (the quantize suite's and the host suite's) does its rows
  in two halves (a multiple of 16 rows each, the global amax taken over the whole tensor first, so the
  result is the same to the bit) and joins them: every kernel runs twice on half the rows and two
  copies join the halves; the kernel table's `calls_per_call` doubles, launches grow on a GPU, time
  barely moves. Stochastic rounding and the RHT path are left whole. TE's native quantizers take the
  tensor's scale inside their one call, so split in halves they would quantize differently: the split
  is torch-ref's (CPU and GPU).
- `host-delay-30us`: te.Linear's forward (TE) and the emulated te.Linear's (torch-ref) busy-wait 30 us
  in Python before their work, on eager calls: `cpu_seconds` +30 us a forward, the device's work
  unchanged (Dynamo would trace the wait away: compiled calls are left alone).
- `graph-break-linear`: the same forwards call `torch._dynamo.graph_break()` first: a compiled
  te.Linear's `graph_breaks` +1 (eager calls do not see it).

Training (each changes how the training suite's model learns while every per-op check, which runs one
forward and backward of an op alone, sees nothing):

- `training-ln-wgrad-last-microbatch`: from optimizer step 10 on (TRAINING_PERTURB_FROM_STEP), the
  gradient of the first layer's input layer norm weight keeps only the last micro-batch's contribution
  instead of the sum over the step's micro-batches: gradient accumulation that overwrites where it should
  add (the kind of wrong-gradient-while-the-forward-is-right bug that makes a model train slowly instead of
  failing). Step 10's gradient norm is the first value that differs, step 11's loss the first loss. A
  scaled gradient (x0.98, say) would barely show: AdamW divides each update by the gradient's running RMS,
  so a constant factor on one parameter's gradient all but cancels.

Every patched call counts itself in `touched`, so a case can say which perturbations its timed call ran.
"""

from __future__ import annotations

import functools
import math
import os
import time
from collections import Counter
from collections.abc import Callable, Hashable
from typing import Any

ENV = "TEWATCH_PERTURB"
# perturbation name -> patched calls since the last reset (benchmarks.harness.case reads it per timing)
touched: Counter[str] = Counter()
# calls of each input shape that measure the original; the first ones are cold (allocations, caches)
CALIBRATION_CALLS = 8
COLD_CALLS = 3


def requested() -> set[str]:
    names = {n.strip() for n in os.environ.get(ENV, "").split(",") if n.strip()}
    known = set(TORCH_REF) | set(TE) | set(TRAINING)
    unknown = names - known
    if unknown:
        raise ValueError(
            f"{ENV} names unknown perturbations: {', '.join(sorted(unknown))}; known: {', '.join(sorted(known))}"
        )
    return names


def _with_extra_passes(name: str, original: Callable, extra: int = 1) -> Callable:
    @functools.wraps(original)
    def with_extra_passes(x: Any, *args: Any, **kwargs: Any) -> Any:
        touched[name] += 1
        for _ in range(extra):
            original(x, *args, **kwargs)
        return original(x, *args, **kwargs)

    return with_extra_passes


class _CudaClock:
    """Times a call on the current CUDA stream and delays the stream by a given time (a spin kernel)."""

    def __init__(self) -> None:
        import torch

        self.torch = torch
        self.cycles_per_second = self._calibrate()

    def elapsed(self, call: Callable[[], Any]) -> float:
        start = self.torch.cuda.Event(enable_timing=True)
        end = self.torch.cuda.Event(enable_timing=True)
        start.record()
        call()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / 1e3

    def _calibrate(self) -> float:
        cycles = 2_000_000
        self.torch.cuda._sleep(cycles)  # first launch loads the kernel
        seconds = min(self.elapsed(lambda: self.torch.cuda._sleep(cycles)) for _ in range(3))
        return cycles / seconds

    def delay(self, seconds: float) -> None:
        self.torch.cuda._sleep(max(int(seconds * self.cycles_per_second), 1))


class _HostClock:
    """The same on the host, for a call without CUDA: perf_counter and a busy wait."""

    @staticmethod
    def elapsed(call: Callable[[], Any]) -> float:
        t0 = time.perf_counter()
        call()
        return time.perf_counter() - t0

    @staticmethod
    def delay(seconds: float) -> None:
        until = time.perf_counter() + seconds
        while time.perf_counter() < until:
            pass


def _default_clock() -> Any:
    import torch

    return _CudaClock() if torch.cuda.is_available() else _HostClock()


def _shape_key(args: tuple, kwargs: dict) -> Hashable:
    return tuple(tuple(getattr(a, "shape", ())) for a in (*args, *kwargs.values()))


def slower_by(
    name: str, original: Callable, fraction: float, clock_factory: Callable[[], Any] = _default_clock
) -> Callable:
    """`original`, taking `fraction` longer: the first CALIBRATION_CALLS calls of each input shape measure
    it (the fastest of those after COLD_CALLS: the first calls of a case are its checks and warm-up, two
    to three times slower on an H200), every call after them is followed by a delay of that share."""
    clock: Any = None
    delays: dict[Hashable, float] = {}
    measured: dict[Hashable, list[float]] = {}

    @functools.wraps(original)
    def slower(*args: Any, **kwargs: Any) -> Any:
        nonlocal clock
        touched[name] += 1
        key = _shape_key(args, kwargs)
        if key in delays:
            out = original(*args, **kwargs)
            clock.delay(delays[key])
            return out
        clock = clock or clock_factory()
        result: list[Any] = []
        times = measured.setdefault(key, [])
        times.append(clock.elapsed(lambda: result.append(original(*args, **kwargs))))
        if len(times) >= CALIBRATION_CALLS:
            delays[key] = fraction * min(times[COLD_CALLS:])
        return result[0]

    return slower


def _slow_quantize(emu: Any) -> None:
    for name in ("quantize_nvfp4", "quantize_nvfp4_columnwise"):
        setattr(emu, name, _with_extra_passes("torchref-slow-quantize", getattr(emu, name), extra=3))


def _rank3_dequantize(emu: Any) -> None:
    original = emu.dequantize_nvfp4

    @functools.wraps(original)
    def mixed_up(q: Any, *args: Any, **kwargs: Any) -> Any:
        touched["torchref-rank3-dequantize"] += 1
        out = original(q, *args, **kwargs)
        if out.dim() >= 3 and out.shape[0] > 1:
            return out.roll(1, dims=0)
        return out

    emu.dequantize_nvfp4 = mixed_up


def _nondeterministic(emu: Any) -> None:
    """Every second quantize flips the lowest bit of its first byte (what a race in a kernel does)."""
    import dataclasses

    for name in ("quantize_nvfp4", "quantize_nvfp4_columnwise"):
        original = getattr(emu, name)
        calls: Counter[str] = Counter()

        def flipping(
            x: Any, *args: Any, _original: Callable = original, _calls: Counter = calls, **kwargs: Any
        ) -> Any:
            touched["torchref-nondeterministic"] += 1
            q = _original(x, *args, **kwargs)
            _calls["n"] += 1
            if _calls["n"] % 2:
                return q
            data = q.data.clone()
            data.view(-1)[0] ^= 1
            return dataclasses.replace(q, data=data)

        setattr(emu, name, functools.wraps(original)(flipping))


def _odd_shape_silent(emu: Any) -> None:
    """A last dimension off the 16 grid is padded with zeros and quantized without a word: the result
    has the padded shape (a silently wrong result where a clean error belongs)."""
    import torch

    original = emu.quantize_nvfp4

    @functools.wraps(original)
    def padding(x: Any, *args: Any, **kwargs: Any) -> Any:
        touched["torchref-odd-shape-silent"] += 1
        rows = math.prod(x.shape[:-1])
        pad_cols, pad_rows = -x.shape[-1] % 16, -rows % 16 if kwargs.get("block_2d") else 0
        if pad_cols or pad_rows:
            x = torch.nn.functional.pad(x.reshape(rows, x.shape[-1]), (0, pad_cols, 0, pad_rows))
        return original(x, *args, **kwargs)

    emu.quantize_nvfp4 = padding


def _compile_eval_path(emu: Any) -> None:
    """Compiled in eval mode, the emulated te.Linear skips quantization (a graph that took another path
    than eager's)."""
    import torch

    from benchmarks.harness import emulated_linear

    original = emulated_linear.EmulatedNVFP4Linear.forward

    @functools.wraps(original)
    def forward(self: Any, x: Any) -> Any:
        touched["torchref-compile-eval-path"] += 1
        if not self.training and torch.compiler.is_compiling():
            return x @ self.weight.t()
        return original(self, x)

    emulated_linear.EmulatedNVFP4Linear.forward = forward  # type: ignore[method-assign]


def _compile_stale_weight(emu: Any) -> None:
    """Compiled in training mode, the emulated te.LayerNormMLP's two linears compute with the weight values
    they were built with (a copy taken once and never refreshed, as a graph that baked the weight in as a
    constant): an update of the weights in place is not seen. The copy is taken outside the graph, so the
    layer compiles once, as the unperturbed one does. A te.Linear on its own (the compile sequences') is
    left as it was: only its own graphs change."""
    import torch

    from benchmarks.harness import emulated_linear

    class StaleWeightLinear(emulated_linear.EmulatedNVFP4Linear):
        _baked_weight: torch.Tensor

        def forward(self, x: Any) -> Any:
            touched["torchref-compile-stale-weight"] += 1
            if not torch.compiler.is_compiling() or not self.training:
                return super().forward(x)
            # the old values, the new gradient
            baked = self.weight + (self._baked_weight - self.weight).detach()
            return emulated_linear._EmulatedNVFP4Linear.apply(x, baked)

    layer = emulated_linear.EmulatedNVFP4LayerNormMLP
    original = layer.__init__

    @functools.wraps(original)
    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        for linear in (self.fc1, self.fc2):
            linear.__class__ = StaleWeightLinear
            linear._baked_weight = linear.weight.detach().clone()

    layer.__init__ = init  # type: ignore[method-assign]


def _fsdp_stale_load(emu: Any) -> None:
    from torch.distributed.tensor import DTensor

    from benchmarks.harness import emulated_linear

    cls = emulated_linear.EmulatedNVFP4Linear
    save, load = cls._save_to_state_dict, cls._load_from_state_dict

    @functools.wraps(save)
    def copied(self: Any, destination: Any, prefix: str, keep_vars: bool) -> None:
        save(self, destination, prefix, keep_vars)
        if isinstance(self.weight, DTensor):
            touched["torchref-fsdp-stale-load"] += 1
            destination[prefix + "weight"] = destination[prefix + "weight"].detach().clone()

    @functools.wraps(load)
    def stale(self: Any, *args: Any, **kwargs: Any) -> None:
        if not isinstance(self.weight, DTensor):
            load(self, *args, **kwargs)

    cls._save_to_state_dict, cls._load_from_state_dict = copied, stale  # type: ignore[method-assign]


def _te_ref_extra_sync(te: Any) -> None:
    import torch

    cls = te.ref.NVFP4QuantizerRef
    original = cls.quantize

    @functools.wraps(original)
    def synchronised(self: Any, tensor: Any, *args: Any, **kwargs: Any) -> Any:
        touched["te-ref-extra-sync"] += 1
        torch.cuda.synchronize()
        return original(self, tensor.clone(), *args, **kwargs)

    cls.quantize = synchronised


def _te_ref_slow_quantize(te: Any) -> None:
    cls = te.ref.NVFP4QuantizerRef
    cls.quantize = _with_extra_passes("te-ref-slow-quantize", cls.quantize)


def _fp8_current_collapsed_transpose(te: Any) -> None:
    cls = te.te.Float8CurrentScalingQuantizer
    original = cls.inner_tensor_specs

    @functools.wraps(original)
    def collapsed(self: Any, shape: Any) -> Any:
        specs = original(self, shape)
        shape = tuple(shape)
        if "_transpose" in specs and len(shape) >= 3:
            specs["_transpose"] = ((shape[-1], math.prod(shape[:-1])), specs["_transpose"][1])
        return specs

    cls.inner_tensor_specs = collapsed


def _gemm_slower(te: Any) -> None:
    te.general_gemm = slower_by("gemm-slower-5", te.general_gemm, 0.05)


def _te_ref_quantize_slower(te: Any) -> None:
    cls = te.ref.NVFP4QuantizerRef
    cls.quantize = slower_by("te-ref-quantize-slower-6", cls.quantize, 0.06)


def _te_ref_rht_slower(te: Any) -> None:
    cls = te.ref.NVFP4QuantizerRef
    cls._apply_rht = slower_by("te-ref-rht-slower-12", cls._apply_rht, 0.12)


def _fp8_current_stale_nd_update(te: Any) -> None:
    """An in-place update of a quantized tensor of rank 3 or more leaves its old values (TE bug zoo #3:
    an N-D `copy_` that reached only part of the buffers)."""
    cls = te.te.Float8CurrentScalingQuantizer
    original = cls.update_quantized

    @functools.wraps(original)
    def stale(self: Any, src: Any, dst: Any, *args: Any, **kwargs: Any) -> Any:
        touched["fp8-current-stale-nd-update"] += 1
        if src.dim() >= 3:
            return dst
        return original(self, src, dst, *args, **kwargs)

    cls.update_quantized = stale


def _fp8_current_extra_pass(te: Any) -> None:
    cls = te.te.Float8CurrentScalingQuantizer
    for method in ("quantize_impl", "update_quantized"):
        original = getattr(cls, method)

        def with_extra_pass(
            self: Any, tensor: Any, *args: Any, _original: Callable = original, **kwargs: Any
        ) -> Any:
            touched["fp8-current-extra-pass"] += 1
            tensor.abs().amax()  # the redundant read of the input
            return _original(self, tensor, *args, **kwargs)

        setattr(cls, method, functools.wraps(original)(with_extra_pass))


MIB = 2**20
# what the memory perturbations hold on to, for the life of the process
leaked: list[Any] = []  # linear-leak-1mib: a tensor a step
workspaces: list[Any] = []  # gemm-extra-workspace-64mib: the second workspace


def _compiling() -> bool:
    import torch

    return bool(torch.compiler.is_compiling())


def _linear_leak(te: Any) -> None:
    import torch

    cls = te.te.Linear
    original = cls.forward

    @functools.wraps(original)
    def leaking(self: Any, inp: Any, *args: Any, **kwargs: Any) -> Any:
        out = original(self, inp, *args, **kwargs)
        if not _compiling():
            touched["linear-leak-1mib"] += 1
            leaked.append(torch.empty(MIB, dtype=torch.uint8, device=inp.device))
        return out

    cls.forward = leaking


def _gemm_extra_workspace(te: Any) -> None:
    import torch

    original = te.general_gemm

    @functools.wraps(original)
    def with_workspace(*args: Any, **kwargs: Any) -> Any:
        touched["gemm-extra-workspace-64mib"] += 1
        if not workspaces:
            device = next((a.device for a in args if hasattr(a, "device")), "cuda")
            workspaces.append(torch.empty(64 * MIB, dtype=torch.uint8, device=device))
        return original(*args, **kwargs)

    te.general_gemm = with_workspace


def _buffers_of(t: Any) -> dict[str, Any]:
    from benchmarks.harness.te_ops import inner_buffers

    return {n: b.detach().clone() for n, b in inner_buffers(t).items() if not n.endswith("scale_inv")}


def _fp8_current_cache_twice(te: Any) -> None:
    cls = te.te.Float8CurrentScalingQuantizer
    quantize_impl, update_quantized = cls.quantize_impl, cls.update_quantized

    @functools.wraps(quantize_impl)
    def keeping(self: Any, tensor: Any, *args: Any, **kwargs: Any) -> Any:
        out = quantize_impl(self, tensor, *args, **kwargs)
        if not _compiling():
            touched["fp8-current-cache-twice"] += 1
            self._kept_twice = _buffers_of(out)
        return out

    @functools.wraps(update_quantized)
    def updating(self: Any, src: Any, dst: Any, *args: Any, **kwargs: Any) -> Any:
        out = update_quantized(self, src, dst, *args, **kwargs)
        if not _compiling():
            touched["fp8-current-cache-twice"] += 1
            self._kept_twice = _buffers_of(dst)
        return out

    cls.quantize_impl, cls.update_quantized = keeping, updating


SHIFT = 1.01


def _fp8_current_shift(te: Any) -> None:
    cls = te.te.Float8CurrentScalingQuantizer
    quantize_impl, update_quantized = cls.quantize_impl, cls.update_quantized

    @functools.wraps(quantize_impl)
    def shifted(self: Any, tensor: Any, *args: Any, **kwargs: Any) -> Any:
        touched["fp8-current-shift-1pct"] += 1
        return quantize_impl(self, tensor * SHIFT, *args, **kwargs)

    @functools.wraps(update_quantized)
    def shifted_update(self: Any, src: Any, dst: Any, *args: Any, **kwargs: Any) -> Any:
        touched["fp8-current-shift-1pct"] += 1
        return update_quantized(self, src * SHIFT, dst, *args, **kwargs)

    cls.quantize_impl, cls.update_quantized = shifted, shifted_update


HOST_DELAY_S = 30e-6


def _host_sync_per_call(te: Any) -> None:
    import torch

    cls = te.te.Linear
    original = cls.forward

    @functools.wraps(original)
    def synchronising(self: Any, *args: Any, **kwargs: Any) -> Any:
        out = original(self, *args, **kwargs)
        if not _compiling():
            touched["host-sync-per-call"] += 1
            torch.cuda.synchronize()
        return out

    cls.forward = synchronising


def _delayed(original: Callable) -> Callable:
    @functools.wraps(original)
    def delayed(*args: Any, **kwargs: Any) -> Any:
        if not _compiling():
            touched["host-delay-30us"] += 1
            _HostClock.delay(HOST_DELAY_S)
        return original(*args, **kwargs)

    return delayed


def _breaking(original: Callable) -> Callable:
    @functools.wraps(original)
    def breaking(*args: Any, **kwargs: Any) -> Any:
        import torch._dynamo

        touched["graph-break-linear"] += 1
        torch._dynamo.graph_break()
        return original(*args, **kwargs)

    return breaking


def _te_linear_delay(te: Any) -> None:
    te.te.Linear.forward = _delayed(te.te.Linear.forward)


def _te_linear_graph_break(te: Any) -> None:
    te.te.Linear.forward = _breaking(te.te.Linear.forward)


def _emulated_linear_delay(emu: Any) -> None:
    from benchmarks.harness import emulated_linear

    cls = emulated_linear.EmulatedNVFP4Linear
    cls.forward = _delayed(cls.forward)  # type: ignore[method-assign]


def _emulated_linear_graph_break(emu: Any) -> None:
    from benchmarks.harness import emulated_linear

    cls = emulated_linear.EmulatedNVFP4Linear
    cls.forward = _breaking(cls.forward)  # type: ignore[method-assign]


SPLIT_ROWS = 16


def _kernel_split(emu: Any) -> None:
    import dataclasses

    import torch

    original = emu.quantize_nvfp4

    @functools.wraps(original)
    def split(x: Any, *args: Any, **kwargs: Any) -> Any:
        rows = math.prod(x.shape[:-1])
        half = rows // 2 // SPLIT_ROWS * SPLIT_ROWS
        whole = args or kwargs.get("stochastic_rounding") or kwargs.get("rht") or not half
        if whole or x.shape[-1] % SPLIT_ROWS:
            return original(x, *args, **kwargs)
        touched["kernel-split"] += 1
        x2d = x.reshape(rows, x.shape[-1])
        amax = kwargs.pop("global_amax", None)
        amax = x2d.abs().amax() if amax is None else amax
        top = original(x2d[:half], global_amax=amax, **kwargs)
        bottom = original(x2d[half:], global_amax=amax, **kwargs)
        data = torch.cat([top.data, bottom.data]).reshape(*x.shape[:-1], -1)
        scales = torch.cat([top.scales, bottom.scales])
        return dataclasses.replace(top, data=data, scales=scales, shape=x.shape)

    emu.quantize_nvfp4 = split


TORCH_REF: dict[str, Callable[[Any], None]] = {
    "torchref-slow-quantize": _slow_quantize,
    "torchref-rank3-dequantize": _rank3_dequantize,
    "torchref-nondeterministic": _nondeterministic,
    "torchref-odd-shape-silent": _odd_shape_silent,
    "torchref-compile-eval-path": _compile_eval_path,
    "torchref-compile-stale-weight": _compile_stale_weight,
    "torchref-fsdp-stale-load": _fsdp_stale_load,
    "kernel-split": _kernel_split,
    "host-delay-30us": _emulated_linear_delay,
    "graph-break-linear": _emulated_linear_graph_break,
}
TE: dict[str, Callable[[Any], None]] = {
    "te-ref-extra-sync": _te_ref_extra_sync,
    "te-ref-slow-quantize": _te_ref_slow_quantize,
    "fp8-current-collapsed-transpose": _fp8_current_collapsed_transpose,
    "gemm-slower-5": _gemm_slower,
    "te-ref-quantize-slower-6": _te_ref_quantize_slower,
    "te-ref-rht-slower-12": _te_ref_rht_slower,
    "fp8-current-extra-pass": _fp8_current_extra_pass,
    "fp8-current-stale-nd-update": _fp8_current_stale_nd_update,
    "linear-leak-1mib": _linear_leak,
    "gemm-extra-workspace-64mib": _gemm_extra_workspace,
    "fp8-current-cache-twice": _fp8_current_cache_twice,
    "fp8-current-shift-1pct": _fp8_current_shift,
    "host-sync-per-call": _host_sync_per_call,
    "host-delay-30us": _te_linear_delay,
    "graph-break-linear": _te_linear_graph_break,
}


TRAINING_PERTURB_FROM_STEP = 10


def _ln_wgrad_last_microbatch(model: Any, current_step: Callable[[], int]) -> None:
    weight = model.first_layernorm_weight()

    def overwrite(grad: Any) -> Any:
        # runs before this backward's gradient is added to `weight.grad`: clearing what the step's earlier
        # micro-batches accumulated leaves the last one's alone
        if current_step() >= TRAINING_PERTURB_FROM_STEP and weight.grad is not None:
            touched["training-ln-wgrad-last-microbatch"] += 1
            weight.grad.zero_()
        return grad

    weight.register_hook(overwrite)


TRAINING: dict[str, Callable[[Any, Callable[[], int]], None]] = {
    "training-ln-wgrad-last-microbatch": _ln_wgrad_last_microbatch,
}


def apply_to_training(model: Any, current_step: Callable[[], int]) -> None:
    """Patch one freshly built model of the training suite (`current_step`: the optimizer step being taken)."""
    for name in sorted(requested() & set(TRAINING)):
        TRAINING[name](model, current_step)


def apply_to_torch_ref() -> None:
    """Patch benchmarks.nvfp4_emulation in place; called once, by benchmarks/__init__.py."""
    names = requested() & set(TORCH_REF)
    if names:
        from benchmarks import nvfp4_emulation as emu

        for name in sorted(names):
            TORCH_REF[name](emu)


def apply_to_te(te: Any) -> None:
    """Patch the TE namespace of benchmarks.harness.te_ops right after TE is imported."""
    for name in sorted(requested() & set(TE)):
        TE[name](te)

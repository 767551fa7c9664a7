"""The base class of every suite class: gate, check once, time many samples, write the record.

asv starts a fresh process for every class x params combination and calls `setup` then
`track_seconds`. In `setup` the case is gated (unsupported -> record + asv skip), prepared and
checked (errors -> record + re-raise, so asv stores a failure); `track_seconds` times the prepared
call and rewrites the record with the GPU state and derived metrics.

Subclasses implement `labels`, `gate` (backend and recipe of the case) and `prepare`, which returns
a `Prepared` and adds its checks to `self.record`.
"""

from __future__ import annotations

import abc
import contextlib
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from benchmarks.harness import gates, kernels, memory, perturb, preload, records
from benchmarks.harness.profiles import Profile, current_profile
from benchmarks.harness.timed_output import OutputCheck, Watched
from benchmarks.harness.timing import (
    Timing,
    TimingPlan,
    cpu_time_call_count,
    measure,
    process_cpu_samples,
)


class Unsupported(NotImplementedError):
    """The capability gate said no: asv records a skip (NaN), the record says `unsupported`."""


@dataclass
class Prepared:
    fn: Callable[[], Any]
    device: str
    # derived values measured beside the timing: name -> (function of the median seconds, unit)
    derived: dict[str, tuple[Callable[[float], float], str]] = field(default_factory=dict)
    flush_l2: bool = True
    # a call whose time follows the GPU's clock under its power limit: the samples span at least this
    # many seconds (up to LONG_SPAN_MAX_SAMPLES of them), whatever the profile's budget and cap
    sample_seconds: float | None = None
    # the profiler pass: kernel time from CUPTI beside the event time and the kernel table on a GPU, the
    # top-level operators on a CPU; off where a profiler cannot follow the call
    kernel_time: bool = True
    # `fn` returns its output: the last timed call's is compared with the first's (timed_output)
    output_check: OutputCheck | None = None
    # (name, call): timed right after `fn` in the same process, stored as the ratio `<case>.over_<name>`,
    # which a busy host or a slow process moves far less than two cases' levels
    reference: tuple[str, Callable[[], Any]] | None = None
    # `fn` is a training step (forward+backward): the allocated bytes after each of several steps give a
    # leak slope (benchmarks.harness.memory)
    steps: bool = False


LONG_SPAN_MAX_SAMPLES = 1000


def sample_plan(profile: Profile, prepared: Prepared) -> TimingPlan:
    plan = TimingPlan(
        budget_s=profile.sample_budget_s,
        min_samples=profile.min_samples,
        max_samples=profile.max_samples,
        flush_l2=prepared.flush_l2,
    )
    if prepared.sample_seconds:
        return replace(
            plan, budget_s=max(plan.budget_s, prepared.sample_seconds), max_samples=LONG_SPAN_MAX_SAMPLES
        )
    return plan


class Case(abc.ABC):
    """Abstract, so asv's discovery never lists it (only its concrete subclasses)."""

    param_names: list[str] = []
    params: list[list[Any]] = []
    timeout = 300
    op = ""
    # the check that a failure of `prepare` is filed under
    main_check = "run"
    # a correctness check whose timing is a by-product: A/B rounds run it once, in round 1
    one_shot = False
    # whether the cases import torch: asv's fork server preloads torch (Dynamo included) and TE for the
    # first class that says so (benchmarks.harness.preload), and a CPU case sets torch's thread count
    needs_torch = True

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        preload.preload_for_case(cls.needs_torch)

    @abc.abstractmethod
    def labels(self, p: dict[str, Any]) -> dict[str, Any]:
        """backend, recipe, mode, rank, op ... of the case (the record's labels)."""

    @abc.abstractmethod
    def prepare(self, p: dict[str, Any], profile: Profile) -> Prepared:
        """Build inputs, run the checks (adding them to self.record), return what to time."""

    def gate_key(self, p: dict[str, Any]) -> tuple[str, str]:
        """(backend, recipe family name) that decides the capability gate."""
        labels = self.labels(p)
        return labels["backend"], labels.get("recipe", "bf16")

    @contextlib.contextmanager
    def optional(self, what: str) -> Iterator[None]:
        """Metrics beside a check (error values, scale health): one that cannot be computed is named in
        the notes and costs the case nothing else."""
        try:
            yield
        except Exception as exc:
            self.record.notes.append(f"no {what}: {type(exc).__name__}: {exc}"[:500])

    # -- asv entry points ------------------------------------------------------------------------

    def setup(self, *values: Any) -> None:
        p = dict(zip(self.param_names, values, strict=False))
        profile = current_profile()
        if profile.device == "cpu" and profile.cpu_threads and self.needs_torch:
            import torch

            torch.set_num_threads(profile.cpu_threads)
        name = f"{type(self).__module__.removeprefix('benchmarks.')}.{type(self).__name__}"
        self.record = records.CaseRecord(case=name, params=p, labels=self.labels(p), one_shot=self.one_shot)
        # asv joins the output of all params of a benchmark; this line lets `tewatch run` split it
        print(f"{records.CASE_MARKER}{self.record.case_id}", file=sys.stderr, flush=True)
        self.prepared: Prepared | None = None
        try:
            backend, recipe = self.gate_key(p)
            caps = gates.current_capabilities(needs_te=backend not in gates.TE_FREE_BACKENDS)
            reason = gates.unsupported_reason(backend, recipe, caps, profile.device)
            if reason:
                raise Unsupported(reason)
            self.prepared = self.prepare(p, profile)
        except Unsupported as exc:
            self.record.add(records.Check(check="capability", status="unsupported", reason=str(exc)))
            records.write_record(self.record)
            raise
        except BaseException as exc:
            self.record.add(records.from_exception(self.main_check, exc))
            records.write_record(self.record)
            if isinstance(exc, NotImplementedError):  # not a skip: TE raised it
                raise RuntimeError(f"{type(exc).__name__}: {exc}") from exc
            raise
        if not self.record.checks:
            self.record.add(records.Check(check=self.main_check, status="pass"))
        records.write_record(self.record)

    def track_seconds(self, *values: Any) -> dict[str, Any]:
        assert self.prepared is not None
        profile = current_profile()
        plan = sample_plan(profile, self.prepared)
        on_gpu = self.prepared.device == "cuda"
        setup_bytes = memory.held_bytes() if on_gpu else None
        nvml = _open_nvml() if on_gpu else None
        states = [nvml.sample()] if nvml else []
        perturb.touched.clear()
        watched = (
            Watched(self.prepared.fn, self.prepared.output_check) if self.prepared.output_check else None
        )
        try:
            timing = measure(watched or self.prepared.fn, self.prepared.device, plan)
        except BaseException as exc:
            self.record.add(records.from_exception("timing", exc))
            records.write_record(self.record)
            raise
        self.record.perturbations = dict(perturb.touched)
        if watched:
            self.record.add(watched.verdict())
        if self.prepared.reference:
            self._over_reference(timing, plan)
        if nvml:
            states.append(nvml.sample())
        if self.prepared.kernel_time:
            self._kernels(timing, plan)
        self._cpu_seconds(timing)
        if setup_bytes is not None:
            self._memory(timing, setup_bytes)
        self._finish(timing, states)
        return timing.asv_payload()

    track_seconds.unit = "seconds"  # type: ignore[attr-defined]

    def _over_reference(self, timing: Timing, plan: TimingPlan) -> None:
        assert self.prepared is not None and self.prepared.reference is not None
        name, call = self.prepared.reference
        try:
            reference = measure(call, self.prepared.device, plan)
        except Exception as exc:  # the reference costs the case its ratio, never its verdict
            self.record.notes.append(f"no ratio over {name}: {type(exc).__name__}: {exc}"[:500])
            return
        self.record.metric(f"over_{name}", timing.median / reference.median, "ratio")

    def _kernels(self, timing: Timing, plan: TimingPlan) -> None:
        """The profiler pass: on a GPU kernel time per call beside the event time, the host's share as its
        own metric and the kernel table; on a CPU the table of top-level operators. A profiler that cannot
        run here costs the case these, never its verdict."""
        assert self.prepared is not None
        started = time.perf_counter()
        try:
            if self.prepared.device == "cuda":
                calls = kernels.kernel_call_count(timing.median, plan.budget_s)
                found = kernels.profile_cuda(self.prepared.fn, plan.flush_l2, calls)
                samples, table = found.samples, found.table
            else:
                calls = kernels.cpu_profile_call_count(timing.median, plan.budget_s)
                samples, table = [], kernels.profile_cpu(self.prepared.fn, calls)
        except Exception as exc:  # CUPTI unavailable, or busy in another profiler
            self.record.notes.append(f"no kernel time: {type(exc).__name__}: {exc}"[:500])
            return
        print(
            f"{kernels.COST_MARKER}{time.perf_counter() - started:.4f} {self.record.case_id}",
            file=sys.stderr,
            flush=True,
        )
        if self.prepared.device == "cuda" and not samples:
            self.record.notes.append("no kernel time: the calls' device activities could not be told apart")
            return
        if samples:
            kernel = statistics.median(samples)
            self.record.metric("kernel_seconds", kernel, "seconds", samples=samples)
            self.record.metric("host_overhead_seconds", max(timing.median - kernel, 0.0), "seconds")
        if table:
            self.record.kernels = table
            for name in ("launches_per_call", "syncs_per_call", "copies_per_call"):
                self.record.metric(name, table[name], "count")

    def _cpu_seconds(self, timing: Timing) -> None:
        """The process's CPU time per call (median), in calls of their own after the timed ones: the timed
        loop's own work (the L2 flush, CUDA events) stays out of it, and it stays out of the samples."""
        assert self.prepared is not None
        on_gpu = self.prepared.device == "cuda"
        if on_gpu:
            import torch

            torch.cuda.synchronize()
        try:
            samples = process_cpu_samples(self.prepared.fn, cpu_time_call_count(timing.median))
        except Exception as exc:
            self.record.notes.append(f"no cpu_seconds: {type(exc).__name__}: {exc}"[:500])
            return
        finally:
            if on_gpu:
                torch.cuda.synchronize()
        self.record.metric("cpu_seconds", statistics.median(samples), "seconds")

    def _memory(self, timing: Timing, setup_bytes: int) -> None:
        """The case's memory in calls of its own, after every timed call; what it cost goes to stderr. A
        measurement that fails costs the case its memory metrics, never its verdict."""
        assert self.prepared is not None
        started = time.perf_counter()
        try:
            found = memory.measure(self.prepared.fn, setup_bytes, self.prepared.steps, timing.median)
        except Exception as exc:
            self.record.notes.append(f"no memory metrics: {type(exc).__name__}: {exc}"[:500])
            return
        for name, (value, unit) in found.items():
            self.record.metric(name, value, unit)
        cost = time.perf_counter() - started
        print(f"{memory.COST_MARKER}{cost:.4f} {self.record.case_id}", file=sys.stderr, flush=True)

    def _finish(self, timing: Timing, states: list[dict[str, Any]]) -> None:
        from benchmarks.harness.gpu_state import collect_series

        assert self.prepared is not None
        for metric, (fn, unit) in self.prepared.derived.items():
            self.record.metric(metric, fn(timing.median), unit)
        self.record.gpu_state = collect_series(states)
        records.write_record(self.record)


def _open_nvml():
    from benchmarks.harness.gpu_state import Nvml

    return Nvml.open()

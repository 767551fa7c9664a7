"""What the CPU profiler pass and the cpu_seconds calls cost a case of the `ci` profile (torch-ref on the CPU).

Each case runs in a fresh process, as asv runs it (Dynamo imported first, as the fork server does): its
setup, its timed samples, then the profiler pass of benchmarks.harness.kernels and the cpu_seconds calls,
each timed; and, side by side, the same call timed plainly and under the profiler, call for call.

    python scripts/kernel_profile_overhead.py            # the default cases below
    python scripts/kernel_profile_overhead.py --case 'rht.Rht:["torch-ref","128x256"]'
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CASES = [
    'quantize.Quantize:["torch-ref","nvfp4-row","128x256"]',
    'quantize.Quantize:["torch-ref","nvfp4-rht","2x2x32x256"]',
    'rht.Rht:["torch-ref","128x256"]',
    'gemm.Gemm:["torch-ref","128x128x256"]',
    'linear.LinearFwdBwd:["torch-ref",2,"eager"]',
    'host.HostOverhead:["torch-ref","linear",16]',
    'host.HostOverhead:["torch-ref","quantize",16]',
    'host.HostOverhead:["torch-ref","layer",16]',
]
PAIRED_CALLS = 40


def measure(spec: str) -> dict[str, float]:
    """In this process: the case's phases and its call plain and under the profiler, in seconds."""
    import importlib

    import torch._dynamo  # noqa: F401  (the fork server's preload imports it)

    from benchmarks.harness import kernels
    from benchmarks.harness.case import sample_plan
    from benchmarks.harness.profiles import current_profile
    from benchmarks.harness.timing import cpu_time_call_count, measure, process_cpu_samples

    target, raw = spec.split(":", 1)
    module, name = target.rsplit(".", 1)
    params = json.loads(raw)
    case = getattr(importlib.import_module(f"benchmarks.{module}"), name)()
    case.setup(*params)
    assert case.prepared is not None
    fn, case_profile = case.prepared.fn, current_profile()
    plan = sample_plan(case_profile, case.prepared)

    started = time.perf_counter()
    timing = measure(fn, "cpu", plan)
    timing_s = time.perf_counter() - started
    calls = kernels.cpu_profile_call_count(timing.median, plan.budget_s)
    started = time.perf_counter()
    kernels.profile_cpu(fn, calls)
    first_pass_s = time.perf_counter() - started
    started = time.perf_counter()
    kernels.profile_cpu(fn, calls)
    second_pass_s = time.perf_counter() - started
    started = time.perf_counter()
    process_cpu_samples(fn, cpu_time_call_count(timing.median))
    cpu_calls_s = time.perf_counter() - started

    from torch.profiler import ProfilerActivity, profile, record_function

    plain, profiled = [], []
    for _ in range(PAIRED_CALLS):  # alternating, so a busy neighbour slows both alike
        t0 = time.perf_counter()
        fn()
        plain.append(time.perf_counter() - t0)
        with profile(activities=[ProfilerActivity.CPU]):
            t0 = time.perf_counter()
            with record_function(kernels.CALL_MARKER):
                fn()
            profiled.append(time.perf_counter() - t0)
    return {
        "call_s": statistics.median(plain),
        "profiled_call_s": statistics.median(profiled),
        "timing_s": timing_s,
        "first_pass_s": first_pass_s,
        "second_pass_s": second_pass_s,
        "cpu_calls_s": cpu_calls_s,
        "profiled_calls": float(calls),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", action="append", help="module.Class:JSON params (repeatable)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(measure(args.worker)))
        return
    env = dict(os.environ, TEWATCH_PROFILE="ci", TEWATCH_BACKENDS="torch-ref", PYTHONPATH=str(ROOT))
    env.pop("TEWATCH_RECORD_DIR", None)
    header = (
        f"{'case':<46} {'call ms':>8} {'x prof':>6} {'timing s':>8} {'pass s':>7} {'warm s':>7} "
        f"{'cpu s':>6} {'added':>6}"
    )
    print(header)
    totals = {"timing_s": 0.0, "first_pass_s": 0.0, "cpu_calls_s": 0.0}
    for spec in args.case or CASES:
        out = subprocess.run(
            [sys.executable, __file__, "--worker", spec], cwd=ROOT, env=env, capture_output=True, text=True
        )
        if out.returncode:
            print(f"{spec:<46} failed: {out.stderr.strip().splitlines()[-1:]}")
            continue
        m = json.loads(out.stdout.strip().splitlines()[-1])
        for key in totals:
            totals[key] += m[key]
        added = (m["first_pass_s"] + m["cpu_calls_s"]) / m["timing_s"]
        print(
            f"{spec[:46]:<46} {m['call_s'] * 1e3:>8.3f} {m['profiled_call_s'] / m['call_s']:>6.2f} "
            f"{m['timing_s']:>8.3f} {m['first_pass_s']:>7.3f} {m['second_pass_s']:>7.3f} "
            f"{m['cpu_calls_s']:>6.3f} {added:>6.0%}"
        )
    added = (totals["first_pass_s"] + totals["cpu_calls_s"]) / totals["timing_s"]
    print(
        f"{'all':<46} {'':>8} {'':>6} {totals['timing_s']:>8.3f} {totals['first_pass_s']:>7.3f} {'':>7} "
        f"{totals['cpu_calls_s']:>6.3f} {added:>6.0%}"
    )
    print(
        "call ms: median call; x prof: the same call under the CPU profiler, over plain (alternating "
        f"{PAIRED_CALLS} each); pass s: the case's profiler pass, the first in its process; warm s: a second "
        "one; cpu s: the cpu_seconds calls; added: pass and cpu_seconds calls over the timed samples' time"
    )


if __name__ == "__main__":
    main()

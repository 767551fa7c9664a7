"""The harness's timing against triton.testing.do_bench on the same calls, and its repeatability (GPU).

    python scripts/bench_harness.py [--repeats 10] [--budget-s S --max-samples N]

For an FP8 (Float8CurrentScaling) quantize and a BF16 GEMM, sampled as the full profile's suites sample
them (or as --budget-s/--max-samples say): the median of the harness's samples and do_bench's median,
measured alternately in one process (target: within 3 %), and the coefficient of
variation of the harness's medians over repeated measurements (target: <= 0.5 % for kernels of
100 us or more). Beside them, the SM clock NVML read after each of the harness's repetitions (lowest
and highest) and how closely the repetitions' medians follow it (Pearson's r): a spread that follows
the clock is the GPU's, not the timer's. Prints a table.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.gemm import GPU_SAMPLE_SECONDS
from benchmarks.harness.case import Prepared, sample_plan
from benchmarks.harness.profiles import get_profile
from benchmarks.harness.timing import coefficient_of_variation, cuda_samples


def calls() -> dict[str, tuple[object, float, float | None]]:
    """name -> (call, flops or 0, the suite's sample_seconds)."""
    import torch

    from benchmarks.harness import te_ops

    torch.manual_seed(0)
    x = torch.randn(8192, 8192, dtype=torch.bfloat16, device="cuda")
    q = te_ops.quantizer("fp8-current")
    out = q.make_empty(x.shape, dtype=torch.bfloat16, device="cuda")

    def quantize() -> None:
        with torch.no_grad():
            q.update_quantized(x, out)

    a = torch.randn(8192, 8192, dtype=torch.bfloat16, device="cuda")
    b = torch.randn(8192, 8192, dtype=torch.bfloat16, device="cuda")
    return {
        "fp8-current quantize 8192x8192": (quantize, 0.0, None),
        "bf16 gemm 8192x8192x8192 (TE)": (lambda: te_ops.gemm(b, a), 2.0 * 8192**3, GPU_SAMPLE_SECONDS),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--budget-s", type=float, help="time the samples of one median fill")
    parser.add_argument("--max-samples", type=int, help="most samples per median")
    args = parser.parse_args()
    from scipy import stats
    from triton.testing import do_bench

    from benchmarks.harness.gpu_state import Nvml

    nvml = Nvml.open()
    profile = get_profile("full")
    rows = []
    for name, (fn, flops, sample_seconds) in calls().items():
        plan = sample_plan(profile, Prepared(fn=fn, device="cuda", sample_seconds=sample_seconds))
        plan = replace(
            plan, budget_s=args.budget_s or plan.budget_s, max_samples=args.max_samples or plan.max_samples
        )
        ours, theirs, clocks = [], [], []
        for _ in range(args.repeats):
            ours.append(cuda_samples(fn, plan).median)
            clocks.append((nvml.sample()["sm_clock_mhz"] if nvml else None) or 0)
            theirs.append(do_bench(fn, warmup=25, rep=100, return_mode="median") / 1e3)
        ours_med, theirs_med = statistics.median(ours), statistics.median(theirs)
        follows = stats.pearsonr(ours, clocks).statistic if len(set(clocks)) > 1 else float("nan")
        rows.append(
            (
                name,
                ours_med,
                theirs_med,
                (ours_med / theirs_med - 1) * 100,
                coefficient_of_variation(ours) * 100,
                coefficient_of_variation(theirs) * 100,
                f"{min(clocks)}-{max(clocks)}",
                follows,
                flops / ours_med / 1e12 if flops else None,
                f"{plan.budget_s:g} s / {plan.max_samples}",
            )
        )
    print(
        f"\n{'call':34} {'harness us':>11} {'do_bench us':>12} {'diff %':>7} {'CV harness %':>13} "
        f"{'CV do_bench %':>14} {'SM MHz':>10} {'r(clock)':>9} {'TFLOP/s':>8}  samples (budget / most)"
    )
    for name, o, t, d, cv_o, cv_t, mhz, r, tf, sampling in rows:
        tfs = f"{tf:8.1f}" if tf else f"{'':>8}"
        print(
            f"{name:34} {o * 1e6:11.2f} {t * 1e6:12.2f} {d:7.2f} {cv_o:13.3f} {cv_t:14.3f} {mhz:>10} "
            f"{r:9.2f} {tfs}  {sampling}"
        )
    print(f"({args.repeats} alternating repetitions each; CV = stdev/mean of the repetitions' medians)")


if __name__ == "__main__":
    main()

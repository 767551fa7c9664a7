"""The harness's timing against triton.testing.do_bench on the same calls, and its repeatability (GPU).

    python scripts/bench_harness.py [--repeats 10]

For an FP8 (Float8CurrentScaling) quantize and a BF16 GEMM: the median of the harness's samples and
do_bench's median, measured alternately in one process (target: within 3 %), and the coefficient of
variation of the harness's medians over repeated measurements (target: <= 0.5 % for kernels of
100 us or more). Prints a table.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.harness.timing import TimingPlan, coefficient_of_variation, cuda_samples  # noqa: E402


def calls() -> dict[str, tuple[object, float]]:
    """name -> (call, flops or bytes for context)."""
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
        "fp8-current quantize 8192x8192": (quantize, 0.0),
        "bf16 gemm 8192x8192x8192 (TE)": (lambda: te_ops.gemm(b, a), 2.0 * 8192**3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args()
    from triton.testing import do_bench

    plan = TimingPlan(budget_s=0.5, min_samples=50, max_samples=100)
    rows = []
    for name, (fn, flops) in calls().items():
        ours, theirs = [], []
        for _ in range(args.repeats):
            ours.append(cuda_samples(fn, plan).median)
            theirs.append(do_bench(fn, warmup=25, rep=100, return_mode="median") / 1e3)
        ours_med, theirs_med = statistics.median(ours), statistics.median(theirs)
        rows.append((name, ours_med, theirs_med, (ours_med / theirs_med - 1) * 100,
                     coefficient_of_variation(ours) * 100, coefficient_of_variation(theirs) * 100,
                     flops / ours_med / 1e12 if flops else None))
    print(f"\n{'call':34} {'harness us':>11} {'do_bench us':>12} {'diff %':>7} {'CV harness %':>13} "
          f"{'CV do_bench %':>14} {'TFLOP/s':>8}")
    for name, o, t, d, cv_o, cv_t, tf in rows:
        tfs = f"{tf:8.1f}" if tf else f"{'':>8}"
        print(f"{name:34} {o * 1e6:11.2f} {t * 1e6:12.2f} {d:7.2f} {cv_o:13.3f} {cv_t:14.3f} {tfs}")
    print(f"({args.repeats} alternating repetitions each; CV = stdev/mean of the repetitions' medians)")


if __name__ == "__main__":
    main()

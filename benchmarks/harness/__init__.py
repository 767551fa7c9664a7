"""What every suite shares: profiles, timing, capability gates, correctness records, GPU state."""

from benchmarks.harness import perturb

perturb.apply_to_torch_ref()

"""What every suite shares: profiles, timing, capability gates, correctness records, GPU state."""

"""Trajectories of the real PyTorch loop in tests/training_runs.py, trained once per test session."""

from __future__ import annotations

import pytest

from tests.training_runs import Trained, train


@pytest.fixture(scope="session")
def trained() -> dict[str, Trained]:
    """base: fp32 and bf16, eager and compiled; aa: the base's fp32 eager again (identical code);
    head: fp32 eager whose first layer norm's gradient is scaled by 0.98 from step 5 on."""
    return {
        "fp32-eager": train("fp32", "eager"),
        "fp32-compiled": train("fp32", "compiled"),
        "bf16-eager": train("bf16", "eager"),
        "aa-fp32-eager": train("fp32", "eager"),
        "head-fp32-eager": train("fp32", "eager", perturb_after=5),
    }

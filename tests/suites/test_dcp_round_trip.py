"""The DCP round trip (benchmarks/harness/dcp_round_trip.py) for real on CPU: torch.distributed.checkpoint
in one process, a module with extra state that loads back whole, one whose extra state is lost, and one
whose state cannot be saved."""

from pathlib import Path

import torch

from benchmarks.harness.dcp_round_trip import dcp_round_trip


class WithExtraState(torch.nn.Module):
    """A linear layer with a scale kept as extra state, as TE modules keep their quantization state."""

    def __init__(self, seed: int, keeps_extra_state: bool = True) -> None:
        super().__init__()
        torch.manual_seed(seed)
        self.linear = torch.nn.Linear(16, 16)
        self.scale = torch.rand(1)
        self.keeps_extra_state = keeps_extra_state

    def get_extra_state(self) -> torch.Tensor:
        return self.scale.clone()  # a new tensor, as TE serialises its state into one

    def set_extra_state(self, state: torch.Tensor) -> None:
        if self.keeps_extra_state:
            self.scale = state

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x) * self.scale


def _buffers(module: WithExtraState) -> dict[str, torch.Tensor]:
    return {"weight": module.linear.weight, "bias": module.linear.bias, "_extra_state": module.scale}


X = torch.randn(4, 16)


def _forward(module: WithExtraState) -> torch.Tensor:
    with torch.no_grad():
        return module(X)


def test_a_module_that_loads_back_whole_passes_every_step(tmp_path: Path) -> None:
    checks = dcp_round_trip(WithExtraState(1), WithExtraState(2), tmp_path, _buffers, _forward)
    assert [(c.check, c.status) for c in checks] == [("dcp_buffers", "pass"), ("dcp_forward", "pass")]


def test_lost_extra_state_fails_the_buffers_and_the_forward_pass(tmp_path: Path) -> None:
    checks = dcp_round_trip(
        WithExtraState(1), WithExtraState(2, keeps_extra_state=False), tmp_path, _buffers, _forward
    )
    by_name = {c.check: c for c in checks}
    assert by_name["dcp_buffers"].status == "fail_accuracy"
    assert by_name["dcp_buffers"].details == {"differing": ["_extra_state"]}
    assert by_name["dcp_forward"].status == "fail_accuracy"


class Unsaveable(WithExtraState):
    def state_dict(self, *args, **kwargs):
        return {"linear.weight": lambda: None}


def test_a_state_that_cannot_be_saved_is_the_save_steps_error(tmp_path: Path) -> None:
    [check] = dcp_round_trip(Unsaveable(1), WithExtraState(2), tmp_path, _buffers, _forward)
    assert check.check == "dcp_save" and check.status == "error" and check.exception_class

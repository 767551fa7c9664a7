"""The training suite's te-free parts for real on CPU (the torch backend at a tiny size): trajectories,
their verdicts (a loss that diverges to NaN, an allocation that cannot be met, a graph capture that fails),
the resume through DCP, an earlier release's checkpoint, and the perturbation that changes training while
the per-op checks see nothing."""

import io
import itertools
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import torch

from benchmarks.harness import records, train_checkpoint
from benchmarks.harness.perturb import TRAINING_PERTURB_FROM_STEP
from benchmarks.harness.profiles import TrainingShape, get_profile
from benchmarks.harness.token_stream import TokenStream
from benchmarks.training import (
    LOAD_CHECKPOINTS_ENV,
    SAVE_CHECKPOINTS_ENV,
    TrainingRun,
    TrainSteps,
    is_case,
    loss_difference,
)

REPO = Path(__file__).resolve().parents[2]
TINY = TrainingShape(
    layers=1, hidden=16, heads=2, ffn_hidden=32, vocab=32, seq_len=8, micro_batch=2, micro_batches=3, steps=14,
    lr=3e-3,
)  # fmt: skip
PERTURBATION = "training-ln-wgrad-last-microbatch"


@pytest.fixture(autouse=True)
def _one_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TEWATCH_PERTURB", raising=False)
    monkeypatch.delenv(LOAD_CHECKPOINTS_ENV, raising=False)
    monkeypatch.delenv(SAVE_CHECKPOINTS_ENV, raising=False)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _record() -> records.CaseRecord:
    return records.CaseRecord(case="training.TrainSteps", params={}, labels={})


def _train(
    folder: Path, shape: TrainingShape = TINY, recipe: str = "fp32"
) -> tuple[TrainingRun, records.CaseRecord, object]:
    run = TrainingRun("torch", recipe, "eager", shape, "cpu", Path(tempfile.mkdtemp(dir=folder)))
    record = _record()
    return run, record, run.trajectory(record, lambda _phase: None)


def test_the_token_stream_is_made_from_the_seed_step_and_micro_batch_alone() -> None:
    stream = TokenStream(seed=7, vocab=50, seq_len=12, micro_batch=3)
    again = TokenStream(seed=7, vocab=50, seq_len=12, micro_batch=3)
    assert torch.equal(stream.batch(5, 1), again.batch(5, 1))
    assert stream.batch(5, 1).shape == (3, 13)
    assert not torch.equal(stream.batch(5, 1), stream.batch(5, 2))
    assert not torch.equal(
        stream.batch(5, 1), TokenStream(seed=8, vocab=50, seq_len=12, micro_batch=3).batch(5, 1)
    )
    # every next token is one of its predecessor's few successors: there is something to learn
    tokens = stream.batch(1, 0)
    for row in tokens:
        for a, b in itertools.pairwise(row):
            assert b in stream.successors[a]


@pytest.mark.parametrize("recipe", ["fp32", "torch-ref"])
def test_a_trajectory_has_every_steps_values_falls_and_repeats_bit_for_bit(
    tmp_path: Path, recipe: str
) -> None:
    _, record, trajectory = _train(tmp_path, recipe=recipe)
    data = record.to_json()["trajectory"]
    assert data["steps"] == TINY.steps == len(data["loss"]) == len(data["grad_norm"])
    assert data["seed"] == TINY.seed and data["micro_batches"] == 3 and data["tokens_per_step"] == 48
    assert data["resumed_from_step"] is None
    assert data["loss"][-1] < data["loss"][0]
    assert record.verdict().status == "pass" and record.verdict().check == "training"
    assert record.metrics["final_loss"] == {"value": data["loss"][-1], "unit": "loss"}
    _, _, again = _train(tmp_path, recipe=recipe)
    assert again.loss == trajectory.loss and again.grad_norm == trajectory.grad_norm


def test_the_resumed_run_equals_the_uninterrupted_one_and_a_load_that_does_nothing_fails(
    tmp_path: Path,
) -> None:
    run, _, uninterrupted = _train(tmp_path)
    check = run.resume_check(uninterrupted)
    assert (check.check, check.status, check.metric, check.value, check.tolerance) == (
        "resume_vs_uninterrupted",
        "pass",
        "max_abs_loss_diff",
        0.0,
        0.0,
    )
    resumed = check.details["trajectory"]
    assert (
        resumed["resumed_from_step"] == TINY.steps // 2 and resumed["steps"] == TINY.steps - TINY.steps // 2
    )

    empty = run.checkpoint.parent / "unrelated"
    unrelated = torch.nn.Linear(2, 2)
    train_checkpoint.save(unrelated, torch.optim.AdamW(unrelated.parameters()), empty)
    run.checkpoint = empty
    with pytest.raises(BaseException) as caught:  # DCP's CheckpointException is a BaseException
        run.resume_check(uninterrupted)
    assert records.from_exception("resume", caught.value).status == "error"


def test_a_fresh_model_that_was_never_loaded_parts_at_the_first_resumed_step(tmp_path: Path) -> None:
    run, _, uninterrupted = _train(tmp_path)
    fresh = run.build(TINY.seed + 1)
    fresh.steps_done = TINY.steps // 2
    diverged = fresh.train(run.stream, TINY.steps, "cpu")
    diff, first = loss_difference(uninterrupted.loss[TINY.steps // 2 :], diverged.loss, TINY.steps // 2)
    assert diff > 0 and first == TINY.steps // 2 + 1


def test_a_loss_that_diverges_to_nan_is_the_cases_verdict_with_its_first_step(tmp_path: Path) -> None:
    shape = TrainingShape(**{**TINY.__dict__, "lr": 1e20, "steps": 6})
    _, record, trajectory = _train(tmp_path, shape)
    verdict = record.verdict()
    assert verdict.status == "fail_accuracy" and verdict.check == "training"
    assert verdict.details == {"first_bad_step": trajectory.first_non_finite_step()}
    assert trajectory.loss[0] is not None and None in trajectory.loss
    assert len(trajectory.loss) == len(trajectory.grad_norm) == 6
    assert "final_loss" not in record.metrics
    json.dumps(record.to_json(), allow_nan=False)  # nulls, never NaN


def test_loss_difference_counts_a_step_non_finite_on_one_side_only_as_infinitely_far() -> None:
    assert loss_difference([1.0, None], [1.0, None], 3) == (0.0, None)
    assert loss_difference([1.0, 2.0], [1.0, None], 3) == (float("inf"), 5)
    assert loss_difference([1.0, 2.0], [1.5, 2.0], 0) == (0.5, 1)
    assert loss_difference([1.0], [], 0)[0] == float("inf")


def test_a_model_larger_than_the_host_is_an_oom_verdict(tmp_path: Path) -> None:
    huge = TrainingShape(**{**TINY.__dict__, "vocab": 2**42})
    with pytest.raises(RuntimeError) as caught:
        _train(tmp_path, huge)
    check = records.from_exception("training", caught.value)
    assert check.status == "oom" and "can't allocate memory" in check.message


def test_a_graph_capture_that_fails_is_an_error_filed_under_graph_capture(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """On a CPU, CUDA graphs cannot be captured: torch's own capture raises, as a broken one would."""
    monkeypatch.setenv("TEWATCH_PROFILE", "ci")
    monkeypatch.setenv(records.RECORD_DIR_ENV, str(tmp_path))
    monkeypatch.delenv("TEWATCH_CAPABILITIES", raising=False)
    case = TrainSteps()
    with pytest.raises(RuntimeError):
        case.setup("torch", "fp32", "graphed")
    (path,) = (tmp_path / "cases").glob("*.json")
    verdict = json.loads(path.read_text())["verdict"]
    assert verdict["status"] == "error" and verdict["check"] == "graph_capture"
    assert verdict["exception_class"] == "RuntimeError" and "CUDAGraph" in verdict["message"]


def test_the_perturbation_parts_the_curves_where_it_starts(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _, _, plain = _train(tmp_path)
    monkeypatch.setenv("TEWATCH_PERTURB", PERTURBATION)
    _, _, broken = _train(tmp_path)
    first = TRAINING_PERTURB_FROM_STEP  # its first wrong gradient; the loss of the step after shows it
    assert broken.grad_norm[: first - 1] == plain.grad_norm[: first - 1]
    assert broken.grad_norm[first - 1] != plain.grad_norm[first - 1]
    assert broken.loss[:first] == plain.loss[:first]
    assert all(b != p for b, p in zip(broken.loss[first:], plain.loss[first:], strict=True))


def _linear_record(tmp_path: Path, perturb: str) -> dict:
    """te.Linear's per-op check (torch-ref, eager, CI size) in a process of its own."""
    env = dict(
        os.environ, TEWATCH_PROFILE="ci", TEWATCH_BACKENDS="torch-ref", TEWATCH_PERTURB=perturb,
        TEWATCH_RECORD_DIR=str(tmp_path),
    )  # fmt: skip
    script = (
        "import torch; torch.set_num_threads(1)\n"
        "from benchmarks.linear import LinearFwdBwd\n"
        "LinearFwdBwd().setup('torch-ref', 3, 'eager')\n"
    )
    subprocess.run(
        [sys.executable, "-c", script], cwd=REPO, env=env, check=True, timeout=300, capture_output=True
    )
    (path,) = (tmp_path / "cases").glob("*.json")
    return json.loads(path.read_text())


def test_the_perturbation_leaves_the_per_op_checks_untouched(tmp_path: Path) -> None:
    plain = _linear_record(tmp_path / "plain", "")
    perturbed = _linear_record(tmp_path / "perturbed", PERTURBATION)
    assert perturbed["verdict"]["status"] == plain["verdict"]["status"] == "pass"
    assert perturbed["metrics"] == plain["metrics"]
    assert [c["value"] for c in perturbed["extra_checks"]] == [c["value"] for c in plain["extra_checks"]]


class ExtraState(torch.nn.Module):
    """A module with extra state of the kind TE keeps: a uint8 tensor whose length depends on its history."""

    def __init__(self, history: int) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(3))
        self.history = list(range(history))

    def get_extra_state(self) -> torch.Tensor:
        return torch.frombuffer(bytearray(json.dumps(self.history).encode()), dtype=torch.uint8)

    def set_extra_state(self, state: torch.Tensor) -> None:
        self.history = json.loads(bytes(state.tolist()).decode()) if state.numel() else []


def test_extra_state_of_another_length_and_the_optimizer_state_load_into_a_fresh_module(
    tmp_path: Path,
) -> None:
    saved = ExtraState(history=20)
    optimizer = torch.optim.AdamW(saved.parameters())
    saved.weight.sum().backward()
    optimizer.step()
    train_checkpoint.save(saved, optimizer, tmp_path / "ckpt")
    fresh = ExtraState(history=0)
    fresh_optimizer = torch.optim.AdamW(fresh.parameters())
    train_checkpoint.load(fresh, fresh_optimizer, tmp_path / "ckpt")
    assert fresh.history == list(range(20)) and torch.equal(fresh.weight, saved.weight)
    assert torch.equal(
        fresh_optimizer.state[fresh.weight]["exp_avg"], optimizer.state[saved.weight]["exp_avg"]
    )
    assert isinstance(train_checkpoint._extra_state_as_bytes(saved.state_dict())["_extra_state"], io.BytesIO)


class GuardedExtraState(ExtraState):
    """Extra state loaded the way TE 2.20 loads delayed scaling's pickle: refused without the opt-in (what
    the H200 answered: "Refusing to load pickled Transformer Engine extra state ... set
    NVTE_ALLOW_UNSAFE_PICKLE_EXTRA_STATE=1")."""

    def get_extra_state(self) -> torch.Tensor:
        return super().get_extra_state() if self.history else torch.empty(0, dtype=torch.uint8)

    def set_extra_state(self, state: torch.Tensor) -> None:
        if state.numel() and os.environ.get(train_checkpoint.UNSAFE_PICKLE_ENV) != "1":
            raise RuntimeError("Refusing to load pickled Transformer Engine extra state")
        super().set_extra_state(state)


@pytest.mark.parametrize("history", [0, 5])
def test_an_empty_extra_state_and_a_guarded_one_load_from_the_case_s_own_checkpoint(
    tmp_path: Path, history: int
) -> None:
    saved = GuardedExtraState(history=history)  # 0: a module that ran no FP8 keeps an empty extra state
    train_checkpoint.save(saved, torch.optim.AdamW(saved.parameters()), tmp_path / "ckpt")
    fresh = GuardedExtraState(history=3)
    train_checkpoint.load(fresh, torch.optim.AdamW(fresh.parameters()), tmp_path / "ckpt")
    assert fresh.history == list(range(history))
    assert train_checkpoint.UNSAFE_PICKLE_ENV not in os.environ


def test_a_checkpoint_kept_for_a_later_release_loads_and_a_mismatched_one_is_an_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(SAVE_CHECKPOINTS_ENV, str(tmp_path / "kept"))
    _train(tmp_path)
    kept = tmp_path / "kept" / "torch-fp32"
    provenance = train_checkpoint.read_provenance(kept)
    assert provenance.step == TINY.steps // 2 and provenance.case == "torch-fp32"
    assert provenance.versions["torch"] == torch.__version__

    monkeypatch.delenv(SAVE_CHECKPOINTS_ENV)
    run, _, uninterrupted = _train(tmp_path)
    check = run.earlier_release_check(tmp_path / "kept", uninterrupted)
    assert check is not None and check.status == "pass" and check.value == 0.0  # the same release: equal
    assert check.details["trajectory"]["resumed_from_step"] == TINY.steps // 2
    assert (
        TrainingRun("torch", "bf16", "eager", TINY, "cpu", tmp_path / "bf16").earlier_release_check(
            tmp_path / "kept", None
        )
        is None
    )

    other = TrainingRun(
        "torch", "fp32", "eager", TrainingShape(**{**TINY.__dict__, "hidden": 32}), "cpu", tmp_path / "other"
    )
    mismatch = other.earlier_release_check(tmp_path / "kept", uninterrupted)
    assert mismatch.status == "error" and mismatch.exception_class == "CheckpointMismatch"
    assert "hidden" in mismatch.message
    (kept / train_checkpoint.META_FILE).write_text("{not json")
    assert run.earlier_release_check(tmp_path / "kept", uninterrupted).status == "error"


def test_profiles_choose_the_cases() -> None:
    ci, quick, full = get_profile("ci"), get_profile("quick"), get_profile("full")
    assert is_case("torch", "fp32", "eager", ci) and is_case("torch", "bf16", "eager", ci)
    assert not is_case("torch", "bf16", "compiled", ci) and not is_case("torch", "bf16", "graphed", ci)
    assert not is_case("torch", "fp8-current", "eager", full) and not is_case("te", "fp32", "eager", full)
    assert is_case("te", "nvfp4", "eager", quick) and is_case("te", "fp8-current", "graphed", quick)
    assert not is_case("te", "fp8-block", "compiled", quick) and is_case("te", "fp8-block", "compiled", full)
    assert is_case(
        "torch", "bf16", "graphed", full
    )  # torch's own CUDA graphs, where the profile runs on a GPU
    assert is_case("torch", "torch-ref", "eager", ci) and is_case("torch", "torch-ref", "compiled", full)
    assert not is_case("torch", "torch-ref", "graphed", full)


@pytest.mark.long_setup
def test_the_ci_profile_trains_the_torch_backend_through_real_asv(project: Path, tmp_path: Path) -> None:
    from tests.runner.test_run_ci_profile import tewatch_run

    results = tmp_path / "results"
    proc = tewatch_run(
        project, tmp_path / "home", "--profile", "ci", "--backends", "torch-ref", "--bench", r"^training\.",
        "--machine", "ci-cpu", "--results-dir", str(results), "--commit", "c" * 40,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    found = {}
    for path in results.glob("ci-cpu/*.tewatch/cases/*.json"):
        record = json.loads(path.read_text())
        found[record["params"]["recipe"]] = record
    assert sorted(found) == ["bf16", "fp32", "torch-ref"]
    ci = get_profile("ci").training
    for recipe, record in found.items():
        assert record["params"] == {"backend": "torch", "recipe": recipe, "execution": "eager"}
        assert record["labels"] == {
            "backend": "torch", "recipe": recipe, "mode": "eager", "op": "training", "execution": "eager",
        }  # fmt: skip
        assert record["verdict"]["status"] == "pass" and record["verdict"]["check"] == "training"
        resume = next(c for c in record["extra_checks"] if c["check"] == "resume_vs_uninterrupted")
        assert (resume["status"], resume["metric"], resume["value"]) == ("pass", "max_abs_loss_diff", 0.0)
        trajectory = record["trajectory"]
        assert trajectory["steps"] == ci.steps == len(trajectory["loss"]) == len(trajectory["grad_norm"])
        assert trajectory["tokens_per_step"] == ci.tokens_per_step and trajectory["resumed_from_step"] is None
        metrics = record["metrics"]
        assert metrics["final_loss"] == {"value": trajectory["loss"][-1], "unit": "loss"}
        assert metrics["tokens_per_second"]["unit"] == "tokens/s"
        assert metrics["tokens_per_second"]["value"] == pytest.approx(
            ci.tokens_per_step / metrics["step_seconds"]["value"]
        )
    (result,) = [p for p in (results / "ci-cpu").glob("*.json") if p.name != "machine.json"]
    timing = json.loads(result.read_text())["results"]["training.TrainSteps.track_seconds"]
    assert sum(isinstance(v, float) and v > 0 for v in timing[0]) == 3  # the three recipes; the rest skips


def test_the_optimizer_state_loads_into_a_fresh_optimizer_whose_parameters_hold_gradients(
    tmp_path: Path,
) -> None:
    """A graph capture's warm-up may leave gradients; torch then skips initialising the target's state."""
    saved = torch.nn.Linear(3, 3)
    optimizer = torch.optim.AdamW(saved.parameters())
    saved(torch.ones(1, 3)).sum().backward()
    optimizer.step()
    train_checkpoint.save(saved, optimizer, tmp_path / "ckpt")
    fresh = torch.nn.Linear(3, 3)
    fresh(torch.ones(1, 3)).sum().backward()
    fresh_optimizer = torch.optim.AdamW(fresh.parameters())
    train_checkpoint.load(fresh, fresh_optimizer, tmp_path / "ckpt")
    assert torch.equal(
        fresh_optimizer.state[fresh.weight]["exp_avg_sq"], optimizer.state[saved.weight]["exp_avg_sq"]
    )


def test_a_case_leaves_no_checkpoint_behind_whether_it_passes_or_fails(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    monkeypatch.setenv("TEWATCH_PROFILE", "ci")
    monkeypatch.delenv(records.RECORD_DIR_ENV, raising=False)
    monkeypatch.delenv("TEWATCH_CAPABILITIES", raising=False)
    case = TrainSteps()
    case.setup("torch", "bf16", "eager")
    assert case.record.verdict().status == "pass" and case.record.trajectory is not None
    with pytest.raises(RuntimeError):
        TrainSteps().setup("torch", "bf16", "graphed")
    assert [p.name for p in scratch.iterdir() if p.name.startswith("tewatch-")] == []

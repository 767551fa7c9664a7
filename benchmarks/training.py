"""A small GPT trains for real: step time, memory and the loss trajectory per recipe and execution.

Per-op checks pass while training breaks (a gradient wrong while the forward is right, an FP8 scaling state
that drifts over steps, a CUDA graph that keeps a stale buffer): this suite trains the model of
benchmarks/harness/gpt.py for a fixed number of optimizer steps and records the loss and gradient norm of
every step. The asv timing is one optimizer step (all its micro-batches); the trajectory comes from a run
of its own before any timed call, the resume check (a DCP checkpoint half way, loaded into a freshly built
model that trains to the end) from a third. docs/training.md says what is measured when.

Judgements across cases (a recipe against bf16 eager, compiled or graphed against eager, head against base)
are the service's; a case's own verdict is a non-finite loss (`fail_accuracy`), an out-of-memory (`oom`), an
exception, a failed graph capture included (`error`), and its resume check.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.harness import perturb, records
from benchmarks.harness.case import Case, Prepared
from benchmarks.harness.params import invalid_combinations
from benchmarks.harness.profiles import Profile, TrainingShape, current_profile, selected_backends

RECIPES = {
    "te": ("bf16", "fp8-delayed", "fp8-current", "fp8-block", "nvfp4"),
    "torch": ("fp32", "bf16", "torch-ref"),
}
EXECUTIONS = ("eager", "compiled", "graphed")
# an earlier release's checkpoints, one folder per "<backend>-<recipe>" (docs/training.md, "Resume")
LOAD_CHECKPOINTS_ENV = "TEWATCH_TRAINING_CHECKPOINTS"
# where eager cases keep their half-way checkpoint for a later release to load
SAVE_CHECKPOINTS_ENV = "TEWATCH_TRAINING_SAVE_CHECKPOINTS"
# the fresh model of a resume is built from another seed: a load that leaves it alone cannot pass
FRESH_SEED_OFFSET = 1
_PROFILE = current_profile()


def backends() -> list[str]:
    """te where the te backend is selected; torch, plain PyTorch without TE, beside torch-ref."""
    chosen = selected_backends()
    return [b for b, needs in (("te", "te"), ("torch", "torch-ref")) if needs in chosen]


# combinations that are no case anywhere: the NVFP4 emulation was written for eager and torch.compile, not
# for CUDA-graph capture
NOT_CASES = ("torch/torch-ref/graphed",)


def is_case(backend: str, recipe: str, execution: str, profile: Profile = _PROFILE) -> bool:
    if recipe not in RECIPES[backend] or (execution == "graphed" and profile.device != "cuda"):
        return False
    if f"{backend}/{recipe}/{execution}" in NOT_CASES:
        return False
    return any(fnmatch.fnmatchcase(f"{backend}/{recipe}/{execution}", p) for p in profile.training_cases)


def training_check(loss: list[float | None]) -> records.Check:
    """The `training` check of an uninterrupted trajectory: a step whose loss was NaN or infinite (None)
    fails it, the first such step named."""
    bad = [step for step, value in enumerate(loss, start=1) if value is None]
    return records.Check(
        check="training",
        status="fail_accuracy" if bad else "pass",
        metric="non_finite_steps",
        value=float(len(bad)),
        tolerance=0.0,
        details={"first_bad_step": bad[0]} if bad else None,
    )


class TrainSteps(Case):
    param_names = ["backend", "recipe", "execution"]
    params = [backends(), sorted({r for b in backends() for r in RECIPES[b]}), list(EXECUTIONS)]
    skip_params = invalid_combinations(params, is_case)
    op = "training"
    timeout = 600

    def labels(self, p: dict[str, Any]) -> dict[str, Any]:
        return {
            "backend": p["backend"],
            "recipe": p["recipe"],
            "mode": p["execution"],
            "op": self.op,
            "execution": p["execution"],
        }

    @property
    def main_check(self) -> str:  # type: ignore[override]
        """A failure is filed under the phase it happened in: training, graph_capture or resume."""
        return getattr(self, "_phase", "training")

    def prepare(self, p: dict[str, Any], profile: Profile) -> Prepared:
        shape, device = profile.training, profile.device
        self._phase = "training"
        with tempfile.TemporaryDirectory(prefix="tewatch-training-") as checkpoint:
            run = TrainingRun(p["backend"], p["recipe"], p["execution"], shape, device, Path(checkpoint))
            uninterrupted = run.trajectory(record=self.record, phase=self._set_phase)
            self._set_phase("resume")
            self.record.add(run.resume_check(uninterrupted))
        earlier = os.environ.get(LOAD_CHECKPOINTS_ENV)
        if earlier and p["execution"] == "eager":
            check = run.earlier_release_check(Path(earlier), uninterrupted)
            if check is None:
                self.record.notes.append(f"no earlier release's checkpoint for {run.case_key} in {earlier}")
            else:
                self.record.add(check)
        self._set_phase("training")
        batches = run.stream.step_batches(1, shape.micro_batches, device)
        tokens = shape.tokens_per_step
        return Prepared(
            fn=lambda: run.trainer.step(batches),
            device=device,
            steps=True,
            derived={
                "step_seconds": (lambda s: s, "seconds"),
                "tokens_per_second": (lambda s: tokens / s, "tokens/s"),
            },
        )

    def _set_phase(self, phase: str) -> None:
        self._phase = phase


class TrainingRun:
    """One case's model, data and trainer, and the runs that check it."""

    def __init__(
        self, backend: str, recipe: str, execution: str, shape: TrainingShape, device: str, checkpoint: Path
    ) -> None:
        """`checkpoint`: the folder of the half-way checkpoint (the caller's, removed by it)."""
        from benchmarks.harness.token_stream import TokenStream

        self.backend, self.recipe, self.execution = backend, recipe, execution
        self.shape, self.device = shape, device
        self.stream = TokenStream(shape.seed, shape.vocab, shape.seq_len, shape.micro_batch)
        self.trainer: Any = None
        self.checkpoint = checkpoint

    @property
    def half(self) -> int:
        return self.shape.steps // 2

    def build(self, seed: int, phase: Any = None) -> Any:
        """A fresh trainer: the model from `seed`, its execution (a graph capture is its own phase), the
        requested perturbations."""
        from benchmarks.harness import gpt
        from benchmarks.harness.executions import micro_batch_loss
        from benchmarks.harness.trainer import Trainer

        model = gpt.build(self.backend, self.recipe, self.shape, self.device, seed)
        if phase and self.execution == "graphed":
            phase("graph_capture")
        loss = micro_batch_loss(model, self.backend, self.recipe, self.execution, self.shape, self.device)
        trainer = Trainer(model, loss, self.shape)
        perturb.apply_to_training(model, lambda: trainer.current_step)
        return trainer

    def trajectory(self, record: records.CaseRecord, phase: Any) -> Any:
        """The uninterrupted run: every step's values, the half-way checkpoint, the `training` check."""
        from benchmarks.harness import train_checkpoint

        started = time.perf_counter()
        self.trainer = self.build(self.shape.seed, phase)
        if self.execution == "graphed":
            record.metric("capture_seconds", time.perf_counter() - started, "seconds")
        phase("training")

        def keep_half_way(trainer: Any) -> None:
            if trainer.steps_done == self.half:
                train_checkpoint.save(trainer.model, trainer.optimizer, self.checkpoint)
                self._save_portable(trainer)

        trajectory = self.trainer.train(self.stream, self.shape.steps, self.device, after_step=keep_half_way)
        record.trajectory = trajectory.to_json()
        record.add(training_check(trajectory.loss))
        final = trajectory.loss[-1]
        if final is not None:
            record.metric("final_loss", final, "loss")
        return trajectory

    def resume_check(self, uninterrupted: Any) -> records.Check:
        """A freshly built model loads the half-way checkpoint and trains to the end: its steps must equal
        the uninterrupted run's."""
        from benchmarks.harness import train_checkpoint

        fresh = self.build(self.shape.seed + FRESH_SEED_OFFSET)
        train_checkpoint.load(fresh.model, fresh.optimizer, self.checkpoint)
        fresh.steps_done = self.half
        resumed = fresh.train(self.stream, self.shape.steps, self.device)
        diff, first = loss_difference(uninterrupted.loss[self.half :], resumed.loss, self.half)
        details: dict[str, Any] = {"trajectory": resumed.to_json()}
        if first is not None:
            details["first_differing_step"] = first
        return records.compare("resume_vs_uninterrupted", "max_abs_loss_diff", diff, 0.0, **details)

    def earlier_release_check(self, folder: Path, uninterrupted: Any) -> records.Check | None:
        """A checkpoint an earlier release saved for this case loads into a freshly built model, which
        trains to the end with a finite loss. How far its losses are from this release's is recorded, not
        judged: the two releases' first halves differ too."""
        from benchmarks.harness import train_checkpoint

        kept = folder / self.case_key
        if not kept.is_dir():
            return None
        try:
            provenance = train_checkpoint.read_provenance(kept)
            train_checkpoint.check_matches(
                provenance, self.case_key, dataclasses.asdict(self.shape), self.shape.steps
            )
            fresh = self.build(self.shape.seed + FRESH_SEED_OFFSET)
            train_checkpoint.load(fresh.model, fresh.optimizer, kept)
        except BaseException as exc:
            return records.from_exception("earlier_release_checkpoint", exc)
        fresh.steps_done = provenance.step
        resumed = fresh.train(self.stream, self.shape.steps, self.device)
        diff, _ = loss_difference(uninterrupted.loss[provenance.step :], resumed.loss, provenance.step)
        bad = resumed.first_non_finite_step()
        return records.Check(
            check="earlier_release_checkpoint",
            status="fail_accuracy" if bad else "pass",
            metric="max_abs_loss_diff",
            value=diff,
            details={
                "saved_by": provenance.versions,
                "trajectory": resumed.to_json(),
                **({"first_bad_step": bad} if bad else {}),
            },
        )

    @property
    def case_key(self) -> str:
        return f"{self.backend}-{self.recipe}"

    def _save_portable(self, trainer: Any) -> None:
        target = os.environ.get(SAVE_CHECKPOINTS_ENV)
        if not target or self.execution != "eager":
            return
        from benchmarks.harness import train_checkpoint

        provenance = train_checkpoint.Provenance(
            case=self.case_key,
            step=trainer.steps_done,
            shape=dataclasses.asdict(self.shape),
            versions=_versions(),
        )
        train_checkpoint.save_portable(
            trainer.model, trainer.optimizer, Path(target) / self.case_key, provenance
        )


def loss_difference(expected: list, got: list, offset: int) -> tuple[float, int | None]:
    """(largest |difference| of two losses step by step, the first step where they differ); a step
    non-finite on one side only differs by infinity, on both sides not at all."""
    if len(expected) != len(got):
        return float("inf"), offset + min(len(expected), len(got)) + 1
    worst, first = 0.0, None
    for i, (a, b) in enumerate(zip(expected, got, strict=True)):
        diff = 0.0 if a is None and b is None else float("inf") if a is None or b is None else abs(a - b)
        if diff > 0 and first is None:
            first = offset + i + 1
        worst = max(worst, diff)
    return worst, first


def _versions() -> dict[str, str | None]:
    import sys

    import torch

    te = sys.modules.get("transformer_engine")
    return {"te": getattr(te, "__version__", None), "torch": torch.__version__}

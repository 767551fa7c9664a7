"""What the training suite costs: per profile, the model's size and the work of one optimizer step (counted
from its shape), and for the shapes that run here (the torch backend on this machine's CPU), the seconds of
each phase of a case measured in one process: building the model, the trajectory run (with its half-way
checkpoint), the resume check and one timed step.

    python scripts/training_cost.py             # every profile's size; the ci profile measured
    python scripts/training_cost.py --measure ci --recipe fp32

FLOPs count the matrix multiplications (forward and backward: 3x the forward's 2 x multiply-adds) of the
layers, the attention scores and the tied output head; elementwise work is left out.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.harness.profiles import PROFILES, TrainingShape, get_profile
from benchmarks.training import RECIPES, TrainingRun


def parameters(shape: TrainingShape) -> int:
    h, f = shape.hidden, shape.ffn_hidden
    per_layer = (3 * h * h + 3 * h) + (h * h + h) + (h * f + f) + (f * h + h) + 4 * h
    return shape.layers * per_layer + shape.vocab * h + 2 * h


def step_flops(shape: TrainingShape) -> float:
    h, f, s = shape.hidden, shape.ffn_hidden, shape.seq_len
    per_token = shape.layers * (4 * h * h + 2 * h * f + 2 * s * h) + shape.vocab * h  # multiply-adds
    return 3 * 2 * per_token * shape.tokens_per_step


def measure(profile: str, recipe: str) -> list[tuple[str, float]]:
    import torch

    torch.set_num_threads(1)
    shape = get_profile(profile).training
    started = time.perf_counter()
    run = TrainingRun("torch", recipe, "eager", shape, "cpu", Path(tempfile.mkdtemp(prefix="tewatch-cost-")))
    run.trainer = run.build(shape.seed)
    built = time.perf_counter()
    trajectory = run.trainer.train(run.stream, shape.steps, "cpu", after_step=_keeper(run))
    trained = time.perf_counter()
    check = run.resume_check(trajectory)
    resumed = time.perf_counter()
    batches = run.stream.step_batches(1, shape.micro_batches, "cpu")
    steps = 5
    for _ in range(steps):
        run.trainer.step(batches)
    timed = time.perf_counter()
    shutil.rmtree(run.checkpoint)
    assert check.status == "pass", check
    return [
        ("build model and optimizer (imports included)", built - started),
        (f"trajectory ({shape.steps} steps, checkpoint)", trained - built),
        (f"resume check ({shape.steps - run.half} steps)", resumed - trained),
        ("one optimizer step", (timed - resumed) / steps),
    ]


def _keeper(run):  # the trajectory run's half-way checkpoint, as the case saves it
    from benchmarks.harness import train_checkpoint

    def keep(trainer) -> None:
        if trainer.steps_done == run.half:
            train_checkpoint.save(trainer.model, trainer.optimizer, run.checkpoint)

    return keep


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--measure", choices=PROFILES, default="ci", help="the profile whose shape runs here")
    parser.add_argument("--recipe", choices=RECIPES["torch"], default="fp32")
    args = parser.parse_args()
    print(
        f"{'profile':8} {'layers':>6} {'hidden':>6} {'params':>12} {'tokens/step':>11} {'steps':>5} {'GFLOP/step':>11}"
    )
    for name in PROFILES:
        shape = get_profile(name).training
        print(
            f"{name:8} {shape.layers:6d} {shape.hidden:6d} {parameters(shape):12,d} {shape.tokens_per_step:11,d} "
            f"{shape.steps:5d} {step_flops(shape) / 1e9:11.1f}"
        )
    print(
        f"\nmeasured here: the torch backend, {args.recipe}, eager, the {args.measure} profile's shape, CPU, 1 thread"
    )
    for phase, seconds in measure(args.measure, args.recipe):
        print(f"  {phase:40} {seconds:9.3f} s")


if __name__ == "__main__":
    main()

"""Training trajectories from a real, seeded PyTorch loop on CPU, as upload bodies shaped like the training
suite's (`training.TrainSteps`, docs/records.md): the tests judge real numbers, not typed-in ones.

The model is a tiny GPT-style stack (an embedding, two pre-norm transformer blocks, a linear head) trained
with AdamW on a deterministic token stream made from the seed, with gradient accumulation. `perturb_after`
scales the gradient of the first block's layer norm by `perturb_scale` (0.98) from that optimizer step on: training changes
while any single op, checked alone, is untouched."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from datetime import UTC, datetime

import torch
from torch import nn

VOCAB, HIDDEN, HEADS, LAYERS, SEQ, BATCH = 64, 32, 4, 2, 16, 4
BENCHMARK = "training.TrainSteps.time_step"
PARAM_NAMES = ["backend", "recipe", "execution"]


@dataclass(frozen=True)
class Trained:
    recipe: str
    execution: str
    loss: list[float | None]
    grad_norm: list[float | None]
    step_seconds: float


class TinyGpt(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(VOCAB, HIDDEN)
        self.blocks = nn.ModuleList(
            nn.TransformerEncoderLayer(
                HIDDEN, HEADS, 2 * HIDDEN, dropout=0.0, batch_first=True, norm_first=True
            )
            for _ in range(LAYERS)
        )
        self.head = nn.Linear(HIDDEN, VOCAB)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        mask = nn.Transformer.generate_square_subsequent_mask(tokens.shape[1])
        hidden = self.embed(tokens)
        for block in self.blocks:
            hidden = block(hidden, src_mask=mask, is_causal=True)
        return self.head(hidden)


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def train(
    recipe: str = "fp32",
    execution: str = "eager",
    steps: int = 12,
    micro_batches: int = 2,
    seed: int = 1234,
    perturb_after: int | None = None,
    perturb_scale: float = 0.98,
) -> Trained:
    """`recipe`: fp32, or bf16 (autocast); `execution`: eager, or compiled (torch.compile through
    AOTAutograd without code generation, `aot_eager`, so it is quick on CPU)."""
    torch.manual_seed(seed)
    model = TinyGpt()
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    forward = torch.compile(model, backend="aot_eager") if execution == "compiled" else model
    stream = torch.Generator().manual_seed(seed)
    tokens = torch.randint(0, VOCAB, (steps * micro_batches, BATCH, SEQ + 1), generator=stream)
    norm = model.blocks[0].norm1.weight
    losses: list[float | None] = []
    norms: list[float | None] = []
    started = datetime.now(UTC)
    for step in range(steps):
        optimizer.zero_grad()
        total = 0.0
        for micro in range(micro_batches):
            batch = tokens[step * micro_batches + micro]
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=recipe == "bf16"):
                logits = forward(batch[:, :-1])
            loss = nn.functional.cross_entropy(logits.float().reshape(-1, VOCAB), batch[:, 1:].reshape(-1))
            (loss / micro_batches).backward()
            total += loss.item() / micro_batches
        if perturb_after is not None and step + 1 >= perturb_after and norm.grad is not None:
            norm.grad.mul_(perturb_scale)
        grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), float("inf"))
        optimizer.step()
        losses.append(_finite(total))
        norms.append(_finite(float(grad_norm)))
    seconds = (datetime.now(UTC) - started).total_seconds() / steps
    return Trained(recipe, execution, losses, norms, seconds)


def case_record(trained: Trained, steps: int = 12, micro_batches: int = 2) -> dict:
    finite = [v for v in trained.loss if v is not None]
    verdict = {"status": "pass", "check": "training"}
    if len(finite) < len(trained.loss):
        first_bad = next(i for i, v in enumerate(trained.loss) if v is None) + 1
        verdict = {"status": "fail_accuracy", "check": "training", "details": {"first_bad_step": first_bad}}
    return {
        "schema": "tewatch.case/1",
        "case": "training.TrainSteps",
        "params": {"backend": "torch", "recipe": trained.recipe, "execution": trained.execution},
        "labels": {
            "backend": "torch",
            "recipe": trained.recipe,
            "mode": trained.execution,
            "op": "training",
            "execution": trained.execution,
        },
        "verdict": verdict,
        "metrics": {
            "step_seconds": {"value": trained.step_seconds, "unit": "seconds"},
            "tokens_per_second": {
                "value": micro_batches * BATCH * SEQ / trained.step_seconds,
                "unit": "tokens/s",
            },
            "peak_allocated_bytes": {"value": 1048576.0, "unit": "bytes"},
            "final_loss": {"value": finite[-1] if finite else 0.0, "unit": "loss"},
        },
        "trajectory": {
            "seed": 1234,
            "steps": steps,
            "micro_batches": micro_batches,
            "tokens_per_step": micro_batches * BATCH * SEQ,
            "loss": trained.loss,
            "grad_norm": trained.grad_norm,
            "resumed_from_step": None,
        },
    }


def upload_parts(runs: list[Trained], sha: str, when: datetime) -> dict[str, list[tuple[str, bytes]]]:
    """The multipart parts of one asv run of the training suite that trained `runs` (tests.uploads'
    post_run sends them)."""
    recipes = sorted({r.recipe for r in runs})
    executions = sorted({r.execution for r in runs})
    by_case = {(r.recipe, r.execution): r for r in runs}
    values = [
        by_case[(recipe, execution)].step_seconds if (recipe, execution) in by_case else math.nan
        for recipe in recipes
        for execution in executions
    ]
    params = [["'torch'"], [repr(r) for r in recipes], [repr(e) for e in executions]]
    env = "existing-py_venv_bin_python3"
    result = {
        "commit_hash": sha,
        "env_name": env,
        "date": int(when.timestamp() * 1000),
        "params": {"machine": "train-cpu", "cpu": "cpu", "os": "Linux", "ram": "1", "python": "3.11"},
        "python": "3.11",
        "requirements": {},
        "env_vars": {},
        "result_columns": ["result", "params", "version", "started_at", "duration"],
        "results": {BENCHMARK: [values, params, "v1", int(when.timestamp() * 1000), 1.0]},
        "durations": {},
        "version": 2,
    }
    benchmarks = {
        BENCHMARK: {
            "name": BENCHMARK,
            "param_names": PARAM_NAMES,
            "params": params,
            "type": "time",
            "unit": "seconds",
            "version": "v1",
        },
        "version": 2,
    }
    machine = {
        "machine": "train-cpu",
        "cpu": "cpu",
        "os": "Linux",
        "ram": "1",
        "version": 1,
        "gpu_model": "cpu",
    }
    run = {"schema": "tewatch.run/1", "profile": "ci", "versions": {"torch": torch.__version__, "te": None}}
    cases = [
        (f"training.TrainSteps-{r.recipe}-{r.execution}.json", json.dumps(case_record(r)).encode())
        for r in runs
    ]
    return {
        "result": [(f"{sha[:8]}-{env}.json", json.dumps(result).encode())],
        "machine": [("machine.json", json.dumps(machine).encode())],
        "benchmarks": [("benchmarks.json", json.dumps(benchmarks).encode())],
        "run": [("run.json", json.dumps(run).encode())],
        "cases": cases,
    }

"""Training trajectories from a real, seeded PyTorch loop on CPU, as upload bodies shaped like the training
suite's (`training.TrainSteps`, docs/records.md): the asv benchmark and its columns as asv stores what
`track_seconds` returns (one optimizer step's samples), the case record written by the suites' own
`CaseRecord` with the suite's checks and metrics. The tests judge real numbers, not typed-in ones.

The model is a tiny GPT-style stack (an embedding, two pre-norm transformer blocks, a linear head) trained
with AdamW on a deterministic token stream made from the seed, with gradient accumulation. `perturb_after`
scales the gradient of the first block's layer norm by `perturb_scale` (0.98) from that optimizer step on: training changes
while any single op, checked alone, is untouched."""

from __future__ import annotations

import json
import math
import statistics
import time
from dataclasses import dataclass
from datetime import datetime

import torch
from asv_runner.statistics import compute_stats
from torch import nn

from benchmarks.harness import records
from benchmarks.training import training_check

VOCAB, HIDDEN, HEADS, LAYERS, SEQ, BATCH = 64, 32, 4, 2, 16, 4
BENCHMARK = "training.TrainSteps.track_seconds"  # what benchmarks/training.py's Case records
PARAM_NAMES = ["backend", "recipe", "execution"]
STATS = ("ci_99_a", "ci_99_b", "q_25", "q_75", "number", "repeat")


@dataclass(frozen=True)
class Trained:
    recipe: str
    execution: str
    loss: list[float | None]
    grad_norm: list[float | None]
    step_samples: list[float]  # seconds of each optimizer step but the first: the suite times warm steps

    @property
    def step_seconds(self) -> float:
        return statistics.median(self.step_samples)


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
    samples: list[float] = []
    for step in range(steps):
        started = time.perf_counter()
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
        samples.append(time.perf_counter() - started)
        losses.append(_finite(total))
        norms.append(_finite(float(grad_norm)))
    return Trained(recipe, execution, losses, norms, samples[1:])


def case_record(trained: Trained, steps: int = 12, micro_batches: int = 2) -> records.CaseRecord:
    """The record benchmarks/training.py writes for the case: its `training` check (NaN or infinite
    losses fail it), the resume check (passed), the timing's derived metrics and the trajectory."""
    params = {"backend": "torch", "recipe": trained.recipe, "execution": trained.execution}
    labels = {**params, "mode": trained.execution, "op": "training"}
    record = records.CaseRecord(case="training.TrainSteps", params=params, labels=labels)
    record.add(training_check(trained.loss))
    record.add(records.compare("resume_vs_uninterrupted", "max_abs_loss_diff", 0.0, 0.0))
    if trained.loss and trained.loss[-1] is not None:
        record.metric("final_loss", trained.loss[-1], "loss")
    tokens = micro_batches * BATCH * SEQ
    record.metric("step_seconds", trained.step_seconds, "seconds")
    record.metric("tokens_per_second", tokens / trained.step_seconds, "tokens/s")
    record.metric("peak_allocated_bytes", 1048576.0, "bytes")  # as on a GPU: the CPU records none
    record.trajectory = {
        "seed": 1234,
        "steps": steps,
        "micro_batches": micro_batches,
        "tokens_per_step": tokens,
        "loss": trained.loss,
        "grad_norm": trained.grad_norm,
        "resumed_from_step": None,
    }
    return record


def upload_parts(runs: list[Trained], sha: str, when: datetime) -> dict[str, list[tuple[str, bytes]]]:
    """The multipart parts of one asv run of the training suite that trained `runs` (tests.uploads'
    post_run sends them)."""
    recipes = sorted({r.recipe for r in runs})
    executions = sorted({r.execution for r in runs})
    by_case = {(r.recipe, r.execution): r for r in runs}
    combos = [by_case.get((recipe, execution)) for recipe in recipes for execution in executions]
    # what asv stores of the samples `track_seconds` returns: the median and asv_runner's statistics
    stats = [compute_stats(r.step_samples, 1) if r else (None, None) for r in combos]
    params = [["'torch'"], [repr(r) for r in recipes], [repr(e) for e in executions]]
    env = "existing-py_venv_bin_python3"
    at = int(when.timestamp() * 1000)
    row = [
        [value if value is not None else math.nan for value, _ in stats],
        params,
        "v1",
        at,
        1.0,
        *([s[key] if s else None for _, s in stats] for key in STATS),
        [r.step_samples if r else None for r in combos],
    ]
    result = {
        "commit_hash": sha,
        "env_name": env,
        "date": at,
        "params": {"machine": "train-cpu", "cpu": "cpu", "os": "Linux", "ram": "1", "python": "3.11"},
        "python": "3.11",
        "requirements": {},
        "env_vars": {},
        "result_columns": [
            "result",
            "params",
            "version",
            "started_at",
            "duration",
            *(f"stats_{key}" for key in STATS),
            "samples",
        ],
        "results": {BENCHMARK: row},
        "durations": {},
        "version": 2,
    }
    benchmarks = {
        BENCHMARK: {
            "name": BENCHMARK,
            "param_names": PARAM_NAMES,
            "params": params,
            "type": "track",
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
    records_of = [case_record(r) for r in runs]
    cases = [(f"{c.case_id}.json", json.dumps(c.to_json(), allow_nan=False).encode()) for c in records_of]
    return {
        "result": [(f"{sha[:8]}-{env}.json", json.dumps(result).encode())],
        "machine": [("machine.json", json.dumps(machine).encode())],
        "benchmarks": [("benchmarks.json", json.dumps(benchmarks).encode())],
        "run": [("run.json", json.dumps(run).encode())],
        "cases": cases,
    }

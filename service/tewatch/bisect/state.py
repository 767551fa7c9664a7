"""A bisection's state file: what it was asked, every commit measured (its verdict, evidence and results
files) and the time spent, written after each step, so a stopped bisection resumes where it stood and
measures no commit twice."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

SCHEMA = "tewatch.bisect/1"


class StateError(Exception):
    """A state file that cannot be read, or that belongs to another bisection."""


@dataclass(frozen=True)
class Question:
    """What a bisection is asked; a state file answers only the question it was started with."""

    repo: str
    good: str
    bad: str
    judge: str
    bench: str
    value: str = ""


@dataclass
class Step:
    commit: str
    verdict: str  # good | bad | skip
    evidence: dict[str, Any] = field(default_factory=dict)
    results: list[str] = field(default_factory=list)  # its results files (A/B: base, then head)
    seconds: float = 0.0
    run_id: int | None = None
    skip_reason: str = ""


@dataclass
class State:
    question: Question
    commits: list[str]
    steps: list[Step] = field(default_factory=list)
    endpoints: dict[str, Any] = field(default_factory=dict)  # how the endpoints differ
    spent_s: float = 0.0
    status: str = "running"  # running | finished | out_of_time | no_difference
    message: str = ""
    bisection_id: int | None = None

    def step(self, commit: str) -> Step | None:
        return next((s for s in self.steps if s.commit == commit), None)

    def put(self, step: Step) -> None:
        self.steps = [s for s in self.steps if s.commit != step.commit] + [step]

    def save(self, path: Path) -> None:
        staged = path.with_name(path.name + ".part")
        staged.write_text(json.dumps({"schema": SCHEMA, **asdict(self)}, indent=1))
        staged.replace(path)


def load(path: Path, question: Question) -> State | None:
    """The state of `question` kept at `path`; None when there is none yet."""
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text())
        if data.pop("schema", None) != SCHEMA:
            raise StateError(f"{path} is not a bisection state file")
        kept = Question(**data.pop("question"))
        steps = [Step(**s) for s in data.pop("steps")]
        state = State(question=kept, steps=steps, **data)
    except (OSError, ValueError, TypeError, KeyError) as exc:
        raise StateError(f"cannot read the state file {path}: {exc}") from exc
    if kept != question:
        raise StateError(
            f"{path} holds another bisection ({kept.good[:12]}..{kept.bad[:12]}, {kept.judge}, "
            f"--bench {kept.bench!r}): give another --state file"
        )
    return state

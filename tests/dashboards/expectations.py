"""What the pages should show, worked out from the fixture files themselves (never typed in by hand)."""

from __future__ import annotations

import json
from dataclasses import dataclass

from tewatch.ingest.discover import RunFiles
from tewatch_dashboards.status import severity
from tewatch_dashboards.views.matrix import matrix_column

FAILURES = {"error", "fail_accuracy", "timeout", "oom"}


@dataclass(frozen=True)
class Record:
    gpu_model: str
    case: str
    params: dict
    labels: dict
    verdict: dict

    @property
    def status(self) -> str:
        return self.verdict.get("status", "")


def gpu_model(run: RunFiles) -> str:
    return json.loads(run.machine.read_text()).get("gpu_model", "")


def records(run: RunFiles) -> list[Record]:
    out = []
    for path in run.cases:
        data = json.loads(path.read_text())
        out.append(
            Record(
                gpu_model(run),
                data["case"],
                data.get("params", {}),
                data.get("labels", {}),
                data.get("verdict", {}),
            )
        )
    return out


def latest_records(runs: list[RunFiles]) -> dict[tuple, Record]:
    """The newest record of every case, by upload order (what the overview and matrix show)."""
    latest: dict[tuple, Record] = {}
    for run in runs:
        for r in records(run):
            latest[(r.gpu_model, r.case, json.dumps(r.params, sort_keys=True))] = r
    return latest


@dataclass(frozen=True)
class ExpectedCell:
    gpu_model: str
    backend: str
    recipe: str
    rank: int
    column: str  # a compile mode or a check op
    status: str
    exception_classes: frozenset[str]


def expected_matrix(runs: list[RunFiles]) -> dict[tuple, ExpectedCell]:
    """Every matrix cell the fixtures fill, with the worst status of the cases that share it."""
    cells: dict[tuple, ExpectedCell] = {}
    for r in latest_records(runs).values():
        rank = r.labels.get("rank", r.params.get("rank"))
        mode = r.labels.get("mode", r.params.get("mode"))
        column = matrix_column(mode, rank, r.labels)
        if column is None:
            continue
        extra = {
            k: v
            for k, v in r.params.items()
            if k not in {"recipe", "rank", "mode", "backend", "quantizer", "variant", "world_size"}
        }
        if extra:
            continue  # rows split by other params; the generic check keeps to the plain grid
        key = (r.gpu_model, r.labels.get("backend", ""), r.labels.get("recipe", ""), column[0], column[1])
        exc = frozenset({r.verdict["exception_class"]} if r.verdict.get("exception_class") else set())
        previous = cells.get(key)
        if previous is None or severity(r.status, None) < severity(previous.status, None):
            cells[key] = ExpectedCell(*key, r.status, exc)
    return cells

"""A/B rounds: base and head measured alternately on one runner, every case in a fresh process each round.

Between processes a case's level moves far more than its samples spread within one (on an H200 te.Linear by
about 14 %, host-bound contract checks by tens of percent), so one process per side cannot tell a 10 %
change from noise. `run_ab` runs the suites K times per side, base and head alternately, in an order that
turns round each round (B H, H B, B H ...): round 1 runs every case (its verdicts are the sides' verdicts),
later rounds only the cases that produced a timing, one-shot checks left out, each appending its samples to
the side's asv results (`asv run --append-samples`) with the side's compile cache warm. Each side ends as
one ordinary asv results file with its sidecar; the sidecar's case records also say how many samples each
round contributed (`round_sizes`) and run.json names the session and side (`ab`), so that the service can
pair the rounds.
"""

from __future__ import annotations

import itertools
import json
import re
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from tewatch.core.metric_names import SAMPLED_METRICS
from tewatch.runner import results, sidecar
from tewatch.runner.suite import RunError, RunOptions, RunOutcome, run_suite


@dataclass
class AbOutcome:
    session: str
    rounds: int
    sides: dict[str, RunOutcome]  # side name -> its run (the first side is the base)
    wall_seconds: float
    round_seconds: list[dict[str, float]] = field(default_factory=list)  # per round: side -> seconds


@dataclass
class _Side:
    name: str
    options: RunOptions
    outcome: RunOutcome | None = None
    # (benchmark or metric series, case id) -> samples contributed by each round
    sizes: dict[tuple[str, str], list[int]] = field(default_factory=dict)
    lost: set[tuple[str, str]] = field(default_factory=set)  # series whose stored samples asv replaced
    records: dict[str, dict[str, Any]] = field(default_factory=dict)  # case id -> merged record
    combinations: list[_Combination] = field(
        default_factory=list
    )  # of the side's results after the last round


def run_ab(
    sides: list[tuple[str, RunOptions]],
    rounds: int,
    deadline_s: float | None = None,
    say: Callable[[str], None] = lambda text: None,
) -> AbOutcome:
    """Measure every side in `rounds` interleaved rounds, in the given order in odd rounds and the reverse
    in even ones (what runs first, on a cooler GPU or a colder page cache, is not always one side). The
    first side is the base, the others heads compared with it (a head of the base's own code is an A/A). With
    `deadline_s`, no round starts that the last one's duration says would end past it (round 1 always
    runs). Every side needs a results folder of its own."""
    if rounds < 1:
        raise RunError(f"--rounds must be at least 1, not {rounds}")
    folders = [Path(o.results_dir).resolve() for _, o in sides if o.results_dir is not None]
    if len(sides) < 2 or len(set(folders)) != len(sides) or len({n for n, _ in sides}) != len(sides):
        raise RunError("an A/B run needs two or more sides, each with a name and a results folder of its own")
    session = secrets.token_hex(8)
    state = [_Side(name, options) for name, options in sides]
    started = time.monotonic()
    timed: str | None = None
    share = 1.0  # of round 1's cases that later rounds run again
    per_round: list[dict[str, float]] = []
    for index in range(1, rounds + 1):
        if index > 1 and deadline_s is not None:
            last = sum(per_round[-1].values()) * (share if index == 2 else 1.0)
            if time.monotonic() - started + last > deadline_s:
                say(f"round {index} would end past the deadline: {index - 1} rounds")
                break
        seconds = {}
        for side in state if index % 2 else state[::-1]:  # B H, H B, B H ...: no side always goes first
            say(f"round {index}/{rounds}: {side.name}")
            t0 = time.monotonic()
            _run_round(side, index, timed)
            seconds[side.name] = round(time.monotonic() - t0, 1)
        per_round.append(seconds)
        if index == 1:
            timed, share = _timed_cases_regex(state)
            if timed is None:
                say("no case produced a repeatable timing in round 1: one round only")
                break
    for position, side in enumerate(state):
        _close(side, session, len(per_round), "base" if position == 0 else "head")
    outcomes = {side.name: side.outcome for side in state if side.outcome is not None}
    return AbOutcome(session, len(per_round), outcomes, round(time.monotonic() - started, 1), per_round)


def _run_round(side: _Side, index: int, timed: str | None) -> None:
    options = side.options if index == 1 else replace(side.options, bench=timed, append_samples=True)
    outcome = run_suite(options)
    side.combinations = _combinations(
        results.load(outcome.results_file),
        results.load(outcome.results_file.parent.parent / "benchmarks.json"),
    )
    for c in side.combinations:
        sizes = side.sizes.setdefault((c.benchmark, c.case_id), [0] * (index - 1))
        sizes.append(len(c.samples or []) - sum(sizes))
    cases = outcome.sidecar / "cases"
    for path in sorted(cases.glob("*.json")):
        fresh = json.loads(path.read_text())
        case_id = path.stem
        merged = side.records.get(case_id)
        if merged is None:
            side.records[case_id] = fresh
        elif fresh != merged:  # rewritten by this round's process
            _append_round(merged, fresh, index)
        for metric in SAMPLED_METRICS:
            measured = side.records.get(case_id, {}).get("metrics", {}).get(metric, {}).get("samples")
            if measured is None:
                continue
            sizes = side.sizes.setdefault((metric, case_id), [0] * (index - 1))
            sizes.append(len(measured) - sum(sizes))
    for key, sizes in side.sizes.items():
        if len(sizes) < index:  # a case that did not run this round contributed nothing
            sizes.append(0)
        if sizes[-1] < 0:  # asv replaced the stored samples (a failed round): the rounds are lost
            side.lost.add(key)
    for case_id, record in side.records.items():  # later rounds rewrite the records: keep the merged ones
        (cases / f"{case_id}.json").write_text(json.dumps(record, indent=1, sort_keys=True))
    side.outcome = outcome


def _append_round(merged: dict[str, Any], fresh: dict[str, Any], index: int) -> None:
    """Round 1's verdict and metrics stay (its compiles were cold); sampled metrics gain this round's
    samples, one-value metrics (bytes, error values) this round's value in `round_values`; a later round
    that fails says so in the record's notes."""
    for metric in SAMPLED_METRICS:
        new = fresh.get("metrics", {}).get(metric, {}).get("samples")
        old = merged.get("metrics", {}).get(metric)
        if new and old is not None:
            old["samples"] = list(old.get("samples") or []) + list(new)
    for name, metric in fresh.get("metrics", {}).items():
        first = merged.get("metrics", {}).get(name)
        if "samples" in metric or first is None or "samples" in first:
            continue
        values = merged.setdefault("round_values", {}).setdefault(name, [first["value"]])
        values.append(metric["value"])
    if fresh["verdict"]["status"] != merged["verdict"]["status"]:
        notes = merged.setdefault("notes", [])
        notes.append(f"round {index}: {fresh['verdict']['status']} ({fresh['verdict'].get('check', '')})")
    if fresh.get("perturbations"):
        counts = merged.setdefault("perturbations", {})
        for name, calls in fresh["perturbations"].items():
            counts[name] = counts.get(name, 0) + calls
    merged["recorded_at"] = fresh.get("recorded_at")


@dataclass(frozen=True)
class _Combination:
    """One parameter combination of an asv results file."""

    benchmark: str
    params: tuple[str, ...]  # asv's reprs
    value: Any
    samples: list | None
    case_id: str


def _combinations(data: dict[str, Any], benchmarks: dict[str, Any]) -> list[_Combination]:
    """Every parameter combination of an asv results file, in asv's (itertools.product) order."""
    columns = data.get("result_columns", ["result", "params"])
    cases = results.iter_case_results(data, benchmarks)  # the same order, with decoded params
    found = []
    for name, row in data.get("results", {}).items():
        row = list(row) + [None] * (len(columns) - len(row))
        combos = list(itertools.product(*(row[columns.index("params")] or [])))
        values = row[columns.index("result")] or [None] * len(combos)
        samples = (row[columns.index("samples")] if "samples" in columns else None) or [None] * len(combos)
        found += [
            _Combination(name, combo, value, sample, next(cases).case_id)
            for combo, value, sample in zip(combos, values, samples, strict=False)
        ]
    return found


def _timed_cases_regex(sides: list[_Side]) -> tuple[str | None, float]:
    """asv's --bench regex for the parameter combinations that produced a timing on any side, one-shot
    checks left out (their records say `one_shot`), and their share of the base's combinations (at least
    0.4: a timed case costs more than a skipped one)."""
    names: set[str] = set()
    for side in sides:
        for c in side.combinations:
            if side.records.get(c.case_id, {}).get("one_shot"):
                continue
            if isinstance(c.value, float) and c.value == c.value:
                names.add(f"{c.benchmark}({', '.join(c.params)})" if c.params else c.benchmark)
    if not names:
        return None, 0.0
    share = max(0.4, min(1.0, len(names) / max(len(sides[0].combinations), 1)))
    return "^(?:" + "|".join(re.escape(n) for n in sorted(names)) + ")$", share


def _close(side: _Side, session: str, rounds: int, role: str) -> None:
    """Write each record's round sizes and run.json's `ab`."""
    assert side.outcome is not None
    cases = side.outcome.sidecar / "cases"
    by_case: dict[str, dict[str, list[int]]] = {}
    for (name, case_id), sizes in side.sizes.items():
        if sum(sizes) > 0 and (name, case_id) not in side.lost:
            by_case.setdefault(case_id, {})[name.rpartition(".")[2]] = sizes
    for path in sorted(cases.glob("*.json")):
        record = json.loads(path.read_text())
        case_sizes = by_case.get(path.stem)
        if case_sizes:
            record["round_sizes"] = case_sizes
            path.write_text(json.dumps(record, indent=1, sort_keys=True))
    run = sidecar.read_run_json(side.outcome.sidecar)
    run.pop("schema", None)
    run["ab"] = {"session": session, "side": role, "arm": side.name, "rounds": rounds}
    sidecar.write_run_json(side.outcome.sidecar, run)

"""The endpoints of a performance bisection measured on an H200 (tests/fixtures/h200-bisect-slowdown): TE
2.20.2's Python as installed against the same with general_gemm 5 % slower, in two interleaved A/B rounds,
read and judged as `tewatch bisect --judge performance` reads and judges them."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from tewatch.bisect import measurements
from tewatch.bisect.environments import EnvironmentMaker
from tewatch.bisect.gitrepo import Repository
from tewatch.bisect.judges import NoDifference, PerformanceJudge
from tewatch.bisect.session import Bisector
from tewatch.bisect.state import SCHEMA, Question, load
from tewatch.bisect.suite_runs import SuiteRun

KEPT = Path(__file__).resolve().parents[1] / "fixtures" / "h200-bisect-slowdown"
TE_GEMMS = {"bf16", "fp8-current", "fp8-block"}


def results_file(name: str) -> Path:
    return next(p for p in (KEPT / "endpoints" / name / "vm-h200").glob("*.json") if p.name != "machine.json")


def side(name: str) -> dict[str, measurements.CaseMeasurement]:
    return measurements.read(results_file(name))


def recipe(results_folder: Path, case_id: str) -> str:
    """The recipe of a case, from its record in an asv results folder (one machine's)."""
    record = next(results_folder.glob(f"*/*.tewatch/cases/{case_id}.json"))
    return json.loads(record.read_text())["params"]["recipe"]


def history(folder: Path) -> tuple[dict[str, str], list[list[str]]]:
    """A kept history.txt: the good, slow and bad commits by name, then every commit and its subject,
    oldest first."""
    lines = (folder / "history.txt").read_text().splitlines()
    return dict(line.split() for line in lines[:3]), [line.split(" ", 1) for line in lines[3:]]


def test_the_history_has_seventeen_commits_and_the_slow_one_in_the_middle() -> None:
    named, commits = history(KEPT)
    assert len(commits) == 17
    assert [sha for sha, _ in commits].index(named["slow"]) == 11
    assert commits[11][1] == "general_gemm takes 5% longer (gemm-slower-5)"
    assert (commits[0][0], commits[-1][0]) == (named["good"], named["bad"])


def test_the_three_te_gemms_event_times_are_the_endpoints_regressions() -> None:
    good, bad = side("base"), side("head")
    assert {c.status for c in good.values() if c.samples} == {"pass"}
    assert all(c.round_sizes["track_seconds"] == [1000, 1000] for c in good.values() if c.samples)
    changed = PerformanceJudge().endpoints(good, bad)
    assert {recipe(KEPT / "endpoints" / "base", key.split()[0]) for key in changed} == TE_GEMMS
    assert {key.split()[1] for key in changed} == {"track_seconds"}
    assert all(found["verdict"] == "regression" for found in changed.values())
    # general_gemm waits 5 % of its own time after each call
    assert all(0.04 < found["effect"] < 0.06 for found in changed.values()), changed


def test_the_good_endpoint_against_itself_is_no_difference() -> None:
    good = side("base")
    with pytest.raises(NoDifference):
        PerformanceJudge().endpoints(good, good)


def test_endpoints_once_found_not_to_differ_are_judged_again_from_their_kept_results(tmp_path: Path) -> None:
    """The H200's first invocation stopped at `no_difference` (its judge pooled event and kernel time in one
    noise family); run again, the bisection judges the kept endpoint measurements anew and measures
    nothing twice: here it stops before the first step, its time budget spent."""
    kept = json.loads((KEPT / "state-first-invocation.json").read_text())
    assert kept["status"] == "no_difference" and "inconclusive" in kept["message"]
    kept["steps"][0]["results"] = [str(results_file(name)) for name in ("base", "head")]
    state_path = tmp_path / "state.json"
    state_path.write_text(json.dumps(kept))
    question = Question(**kept["question"])
    state = load(state_path, question)
    assert state is not None and kept["schema"] == SCHEMA
    bisector = Bisector(
        state,
        state_path,
        maker=EnvironmentMaker(Repository(tmp_path), tmp_path / "envs"),
        suite=SuiteRun(tmp_path, question.bench),
        work=tmp_path / "work",
        budget_s=state.spent_s,
    )
    after = bisector.run()
    assert after.status == "out_of_time"
    assert len(after.steps) == 1  # the bad endpoint's A/B, measured once
    assert len(after.endpoints) == 3
    assert {found["verdict"] for found in after.endpoints.values()} == {"regression"}
    assert not (tmp_path / "work").exists() and not (tmp_path / "envs").exists()


HALVING = KEPT / "halving-h100"


def halving_state() -> dict:
    return json.loads((HALVING / "state.json").read_text())


def kept_step_sides(step: dict) -> tuple[dict[str, measurements.CaseMeasurement], ...]:
    """A step's good-endpoint and candidate measurements, read from the fixture (its state names the
    device's paths)."""
    return tuple(
        measurements.read(HALVING / "runs" / Path(path).relative_to("/tmp/slow-work/runs"))
        for path in step["results"]
    )


def test_the_h100_halving_names_the_slow_commit_in_at_most_log2_n_plus_one_measured_commits() -> None:
    state = halving_state()
    named, commits = history(HALVING)
    order = [sha for sha, _ in commits]
    assert state["status"] == "finished" and state["commits"] == order
    assert (state["question"]["good"], state["question"]["bad"]) == (named["good"], named["bad"])
    measured = [step["commit"] for step in state["steps"]]
    between = len(order) - 2
    assert len(set(measured)) == len(measured) <= math.ceil(math.log2(between + 1)) + 1
    slow = order.index(named["slow"])
    for step in state["steps"]:
        assert step["verdict"] == ("bad" if order.index(step["commit"]) >= slow else "good"), step["commit"]
    verdicts = {order.index(s["commit"]): s["verdict"] for s in state["steps"]}
    assert (verdicts[slow - 1], verdicts[slow]) == ("good", "bad")  # adjacent: the halving's end


def test_every_step_of_the_halving_is_what_the_judge_finds_in_its_kept_results() -> None:
    state = halving_state()
    judge = PerformanceJudge()
    good, bad = kept_step_sides(state["steps"][0])
    assert judge.endpoints(good, bad) == state["endpoints"]
    good_side = HALVING / "runs" / state["question"]["bad"] / "base"
    assert {recipe(good_side, key.split()[0]) for key in state["endpoints"]} == TE_GEMMS
    assert all(0.025 < found["effect"] < 0.06 for found in state["endpoints"].values())
    for step in state["steps"][1:]:
        judged = judge.judge(*kept_step_sides(step))
        assert (judged.verdict.value, judged.evidence) == (step["verdict"], step["evidence"]), step["commit"]


def test_the_served_bisection_names_the_culprit_with_its_subject_link_and_every_step() -> None:
    state, served = halving_state(), json.loads((HALVING / "bisection.json").read_text())
    slow = history(HALVING)[0]["slow"]
    assert (served["status"], served["culprit_sha"], served["candidates"]) == ("finished", slow, [slow])
    assert served["culprit_subject"] == "general_gemm takes 5% longer (gemm-slower-5)"
    assert served["culprit_url"] == f"https://github.com/local/slow-history/commit/{slow}"
    assert {s["sha"]: s["verdict"] for s in served["steps"]} == {
        s["commit"]: s["verdict"] for s in state["steps"]
    }

"""The kept H200 A/B rounds (tests/fixtures/h200-ab-rounds: base and the four sized slowdowns, two rounds
interleaved on one machine) and A/A rounds (tests/fixtures/h200-aa-quick: the same code on both sides)
compared again through a real service, and the kept same-code arms of tests/fixtures/h200-aa-subset
compared round by round."""

import ast
import itertools
import json
from pathlib import Path

import pytest

from tests.campaign.replay import FIXTURES, replay_campaign
from tewatch.detect.compare import ComparePair, CompareVerdict, Side, compare_sweep

pytestmark = pytest.mark.long_running

# te-ref quantize +6 % is about 0.3 % of a te.Linear step of TE's reference recipe: below min_effect
TOO_SMALL_TO_MATTER = {
    f"linear.LinearFwdBwd(mode={mode}, rank={rank}, recipe=nvfp4-ref)"
    for mode in ("default", "eager")
    for rank in (2, 3)
}


def _compared_again(kept: Path, out: Path) -> tuple[dict, dict]:
    """(the campaign's score of the head's cases, the pr.report's data)."""
    scored = replay_campaign(kept / "base-results", kept / "head-results", out)["perturbations"]
    [report] = [json.loads(p.read_text())["body"]["data"] for p in (out / "webhooks").glob("*pr.report*")]
    return scored, report


def _timed_cases(results: Path) -> int:
    """Cases of a results folder that were timed round after round (not one-shot, not unsupported)."""
    records = [json.loads(p.read_text()) for p in results.glob("vm-h200/*.tewatch/cases/*.json")]
    return sum(
        1 for r in records if not r.get("one_shot") and r["verdict"]["status"] == "pass" and r["metrics"]
    )


def test_every_case_the_slowdowns_move_is_a_regression_and_nothing_else_changes(tmp_path) -> None:
    scored, report = _compared_again(FIXTURES / "h200-ab-rounds", tmp_path)
    assert scored["touched"] == 27 and scored["regressions"] == 23 and scored["flagged_untouched"] == []
    missed = {m.split(":")[0] for m in scored["missed"]}
    assert missed == TOO_SMALL_TO_MATTER and all("kernel_seconds unchanged" in m for m in scored["missed"])
    assert report["rounds"] == 2
    cases = report["case_counts"]
    untouched = sum(cases.values()) - scored["touched"]
    assert cases["regression"] == 23 and cases.get("improvement", 0) == 0
    # the untouched timed cases (contract checks, timed once, included) mostly say "unchanged"
    assert cases["unchanged"] - len(TOO_SMALL_TO_MATTER) >= untouched / 2


def test_the_same_code_on_both_sides_changes_no_case_and_most_timed_cases_are_unchanged(tmp_path) -> None:
    kept = FIXTURES / "h200-aa-quick"
    scored, report = _compared_again(kept, tmp_path)
    assert report["rounds"] == 2
    cases = report["case_counts"]
    assert cases.get("regression", 0) + cases.get("improvement", 0) <= 1 and scored["flagged_untouched"] == []
    timed = _timed_cases(kept / "head-results")
    assert timed == 61
    assert cases["unchanged"] >= timed / 2


def _rounds_of(side: Path, rounds: int, keep: int) -> dict[tuple[str, str, str], Side]:
    """Series of an arm whose rounds each added the same number of samples, cut to its first `keep`."""
    [path] = [p for p in side.glob("vm-h200/*.json") if p.name != "machine.json"]
    data, benchmarks = json.loads(path.read_text()), json.loads((side / "benchmarks.json").read_text())
    records = {}
    for record_path in path.with_suffix(".tewatch").glob("cases/*.json"):
        record = json.loads(record_path.read_text())
        records[record["case"], json.dumps(record["params"], sort_keys=True)] = record
    columns, found = data["result_columns"], {}
    for name, row in data["results"].items():
        row = dict(zip(columns, row, strict=False))
        names = benchmarks[name]["param_names"]
        for combo, samples in zip(itertools.product(*row["params"]), row["samples"], strict=False):
            params = json.dumps(
                {n: ast.literal_eval(v) for n, v in zip(names, combo, strict=False)}, sort_keys=True
            )
            case = name.rsplit(".", 1)[0]
            kernel = (
                records.get((case, params), {}).get("metrics", {}).get("kernel_seconds", {}).get("samples")
            )
            for metric, values in (("track_seconds", samples), ("kernel_seconds", kernel)):
                if values and len(values) % rounds == 0:
                    size = len(values) // rounds
                    found[case, params, metric] = Side(values[: keep * size], [size] * keep)
    return found


def test_the_same_code_in_two_interleaved_arms_is_unchanged_in_every_case() -> None:
    # the head arm's third round was cut off by its time limit: both arms' first two rounds pair
    kept = FIXTURES / "h200-aa-subset"
    base, head = _rounds_of(kept / "base", 3, 2), _rounds_of(kept / "head", 2, 2)
    primary = {
        "gemm.Gemm": "track_seconds",
        "quantize.Quantize": "kernel_seconds",
        "rht.Rht": "kernel_seconds",
    }
    keys = sorted(k for k in base.keys() & head.keys() if primary[k[0]] == k[2])
    assert len(keys) == 33
    compared = compare_sweep([ComparePair(base[k], head[k], family=k[0], paired=True) for k in keys])
    assert {c.verdict for c in compared} == {CompareVerdict.unchanged}
    assert all(c.rounds == 2 for c in compared)

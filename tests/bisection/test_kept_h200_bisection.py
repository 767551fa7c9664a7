"""The bisection of contracts.CheckpointParity over TE's main on an H200, kept in
tests/fixtures/h200-bisect-te: its recorded verdicts lead the pure search to the same first bad commit in
no more commits than the halving allows, and the kept records show what flipped there."""

from __future__ import annotations

import json
from pathlib import Path

from tewatch.bisect.search import Verdict, finding, most_steps

KEPT = Path(__file__).resolve().parents[1] / "fixtures" / "h200-bisect-te"
FIRST_BAD = (
    "bf4b2b9f8f071689daf97e191ee8c7d8708c22dc"  # [PyTorch][torch.compile] Add TensorProto mechanism (#3153)
)
LAST_GOOD = "8ff60f8dec2585644169cb295cee9d7a45bf5e1d"  # its parent on main


def kept_state() -> dict:
    return json.loads((KEPT / "state.json").read_text())


def test_the_recorded_verdicts_name_the_first_bad_commit_within_the_halvings_bound() -> None:
    state = kept_state()
    commits = state["commits"]
    verdicts = {step["commit"]: Verdict(step["verdict"]) for step in state["steps"]}
    found = finding(commits, verdicts)
    assert found is not None and found.culprit == FIRST_BAD and found.last_good == LAST_GOOD
    assert commits.index(FIRST_BAD) == commits.index(LAST_GOOD) + 1
    assert Verdict.skip not in verdicts.values()
    between = len(commits) - 2
    assert between == 97 and len(verdicts) - 2 <= most_steps(between)


def case_record(commit: str, quantizer: str) -> dict:
    for path in (KEPT / "bisect" / "runs" / commit / "vm-h200").glob(
        "*.tewatch/cases/contracts.CheckpointParity-*.json"
    ):
        record = json.loads(path.read_text())
        if record["params"].get("quantizer") == quantizer:
            return record
    raise AssertionError(f"no CheckpointParity {quantizer} record at {commit}")


def test_the_flip_is_the_transpose_that_the_round_trip_drops() -> None:
    for quantizer in ("fp8-current", "fp8-delayed"):
        before, after = (
            case_record(LAST_GOOD, quantizer)["verdict"],
            case_record(FIRST_BAD, quantizer)["verdict"],
        )
        assert before["status"] == "pass" and before["value"] == 0.0
        assert after["status"] == "fail_accuracy" and after["details"]["differing"] == ["_transpose"]

"""The kept three-arm H200 campaign (tests/fixtures/h200-ab-quick) compared again through a real service:
the sized slowdowns against the base, and the A/A arm against the base, one process per case and side.
The campaign scores its pull request against the perturbations each head case ran (campaign/scoring)."""

from pathlib import Path

import pytest

from tests.campaign.replay import FIXTURES, replay_campaign

pytestmark = pytest.mark.long_running

KEPT = FIXTURES / "h200-ab-quick"


def _compare(arm: str, out: Path) -> dict:
    return replay_campaign(KEPT / "base-results", KEPT / f"{arm}-results", out)["perturbations"]


def test_the_extra_fp8_pass_is_found_in_kernel_time_where_event_time_cannot_see_it(tmp_path) -> None:
    scored = _compare("head", tmp_path)
    assert scored["touched"] == 27 and scored["regressions"] == 11
    # every te.Linear and quantize case that ran the extra FP8 pass, and the reference RHT, are regressions;
    # what one process per side misses: GEMM +5 % (under the 2 % single-run floor), the reference
    # quantize's +6 to +7 %, and te.Linear's reference recipe, where that quantize is 0.3 % of the step
    missed = " ".join(scored["missed"])
    assert "fp8-current-extra-pass" not in missed and "rht.Rht" not in missed
    # single runs: the bf16 te.Linear kernel time moved by 12-14 % between processes (the README)
    assert len(scored["flagged_untouched"]) == 2
    assert all(
        f.startswith("linear.LinearFwdBwd(") and "recipe=bf16" in f for f in scored["flagged_untouched"]
    )


def test_the_a_a_arm_is_told_apart_from_the_base_in_at_most_two_cases(tmp_path) -> None:
    scored = _compare("aa", tmp_path)
    assert scored["touched"] == 0 and len(scored["flagged_untouched"]) <= 2

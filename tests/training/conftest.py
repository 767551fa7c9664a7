"""Trajectories of the real PyTorch loop in tests/training_runs.py, trained once per test session."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from tests.dashboards.conftest import browser, page  # noqa: F401 - Chromium, as the pages' tests drive it
from tests.training_runs import Trained, train, upload_parts
from tests.uploads import post_run

START = datetime(2026, 11, 20, tzinfo=UTC)
BASE_SHA, AA_SHA, HEAD_SHA, BROKEN_SHA = "1" * 40, "2" * 40, "4" * 40, "3" * 40
PR_NUMBER = 35


@pytest.fixture(scope="session")
def trained() -> dict[str, Trained]:
    """base: fp32 and bf16, eager and compiled; aa: the base's fp32 eager again (identical code);
    head: fp32 eager whose first layer norm's gradient is scaled by 0.98 from step 5 on."""
    return {
        "fp32-eager": train("fp32", "eager"),
        "fp32-compiled": train("fp32", "compiled"),
        "bf16-eager": train("bf16", "eager"),
        "aa-fp32-eager": train("fp32", "eager"),
        "head-fp32-eager": train("fp32", "eager", perturb_after=5),
    }


def upload_history(client, trained: dict[str, Trained]) -> dict[str, int]:
    """Uploads, in order: base and an A/A on main (fp32 eager and compiled, bf16 eager), a pull request
    whose fp32 eager is the perturbed head, then a main run whose compiled fp32 trains like the perturbed
    head. Run ids by name."""
    base = [trained["fp32-eager"], trained["fp32-compiled"], trained["bf16-eager"]]
    aa = [trained["aa-fp32-eager"], trained["fp32-compiled"], trained["bf16-eager"]]
    head = [trained["head-fp32-eager"], trained["fp32-compiled"], trained["bf16-eager"]]
    broken = [
        trained["fp32-eager"],
        replace(trained["head-fp32-eager"], execution="compiled"),
        trained["bf16-eager"],
    ]
    pr = {"branch": "feature", "pr_number": str(PR_NUMBER), "merge_base_sha": AA_SHA}
    ids = {}
    for i, (name, runs, sha, fields) in enumerate(
        [
            ("base", base, BASE_SHA, {"branch": "main"}),
            ("aa", aa, AA_SHA, {"branch": "main"}),
            ("head", head, HEAD_SHA, pr),
            ("broken", broken, BROKEN_SHA, {"branch": "main"}),
        ]
    ):
        answer = post_run(client, upload_parts(runs, sha, START + timedelta(hours=i)), **fields)
        assert answer.status_code == 201, answer.text
        ids[name] = answer.json()["run_id"]
    return ids

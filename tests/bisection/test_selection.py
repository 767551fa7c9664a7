"""Which benchmarks a bisection's selection names, found by asv's discovery in this project's own suites."""

from __future__ import annotations

import sys
from pathlib import Path

from tewatch.bisect.suite_runs import SuiteRun

PROJECT = Path(__file__).resolve().parents[2]


def test_the_projects_own_config_and_suites_are_read() -> None:
    # asv.conf.json carries comments, as asv allows
    assert "//" in (PROJECT / "asv.conf.json").read_text()
    chosen = SuiteRun(PROJECT, r"^contracts\.CheckpointParity\.").selected(sys.executable)
    assert chosen == ["contracts.CheckpointParity.track_seconds"]

"""Which benchmarks a bisection's selection names, found by asv's discovery in this project's own suites."""

from __future__ import annotations

import sys
from pathlib import Path

from tewatch.bisect.suite_runs import SuiteRun, asv_names

PROJECT = Path(__file__).resolve().parents[2]


def test_the_projects_own_config_and_suites_are_read_and_a_parameter_selects_as_in_asv() -> None:
    # asv.conf.json carries comments, as asv allows; asv matches a parameterized benchmark's
    # `name(param, ...)`, so a selection may name a parameter
    assert "//" in (PROJECT / "asv.conf.json").read_text()
    chosen = SuiteRun(PROJECT, r"^contracts\.CheckpointParity\.track_seconds\('torch-ref'").selected(
        sys.executable
    )
    assert chosen == ["contracts.CheckpointParity.track_seconds"]


def test_a_benchmark_is_matched_by_its_name_or_by_each_parameter_combination() -> None:
    plain = {"name": "checks.Plain.track_seconds", "params": []}
    gemm = {"name": "gemm.Gemm.track_seconds", "params": [["'bf16'", "'fp8-current'"], ["'8192x8192x5120'"]]}
    assert asv_names(plain) == ["checks.Plain.track_seconds"]
    assert asv_names(gemm) == [
        "gemm.Gemm.track_seconds('bf16', '8192x8192x5120')",
        "gemm.Gemm.track_seconds('fp8-current', '8192x8192x5120')",
    ]

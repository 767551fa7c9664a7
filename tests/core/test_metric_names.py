"""The suites record every metric name the service treats apart (tewatch.core.metric_names): they may not
import it, so a renamed metric in benchmarks/ would otherwise go unnoticed."""

from __future__ import annotations

import ast
from pathlib import Path

from tewatch.core.metric_names import SUITE_METRICS

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def _names_in_suites() -> set[str]:
    """Every string literal and function name in benchmarks/, where the suites name their metrics."""
    found = set()
    for path in BENCHMARKS.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                found.add(node.value)
            elif isinstance(node, ast.FunctionDef):
                found.add(node.name)
    return found


def test_the_suites_record_every_metric_the_service_names():
    assert set(SUITE_METRICS) - _names_in_suites() == set()


def test_a_name_the_suites_do_not_record_is_told_apart():
    assert "kernel_seconds_renamed" not in _names_in_suites()

"""End to end: the host-overhead suite under the real `tewatch run --profile ci` (real `asv run`, CPU
torch), with a host delay applied: every case records its operators, its CPU time and its timed output."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.long_setup

COMMIT = "0123456789abcdef0123456789abcdef01234567"


def test_the_host_suite_records_kernels_cpu_time_and_the_perturbation_it_ran(
    project: Path, tmp_path: Path
) -> None:
    results = tmp_path / "results"
    env = dict(os.environ, HOME=str(tmp_path), TEWATCH_PERTURB="host-delay-30us")
    env.pop("TEWATCH_PROFILE", None)
    env.pop("TEWATCH_BACKENDS", None)
    command = [sys.executable, "-m", "tewatch.runner", "--project", str(project), "--profile", "ci"]
    command += ["--backends", "torch-ref", "--bench", r"^host\.", "--machine", "ci-cpu"]
    command += ["--results-dir", str(results), "--commit", COMMIT]
    proc = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    sidecar = next((results / "ci-cpu").glob("*.tewatch"))
    records = {
        json.loads(p.read_text())["labels"]["op"]: json.loads(p.read_text()) for p in sidecar.glob("cases/*")
    }
    assert set(records) == {"host_linear", "host_quantize", "host_layer"}
    for op, record in records.items():
        assert record["verdict"]["status"] == "pass", record
        assert record["labels"]["tokens"] == 16
        assert record["metrics"]["cpu_seconds"]["value"] > 0
        kernels = record["kernels"]
        assert kernels["device"] == "cpu" and kernels["table"], op
        assert {kernels[k] for k in ("launches_per_call", "syncs_per_call", "copies_per_call")} == {0.0}
        checks = {c["check"]: c["status"] for c in [record["verdict"], *record["extra_checks"]]}
        assert checks["timed_output"] == "pass"
    # the delay sits in the emulated te.Linear's forward: the linear step ran it, the quantize did not
    assert records["host_linear"]["perturbations"]["host-delay-30us"] >= 5
    assert "perturbations" not in records["host_quantize"]

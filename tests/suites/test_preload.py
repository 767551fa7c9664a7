"""Forked cases: the launch-method choice, the fork check and the preload guard, on this CPU machine."""

import os
import subprocess
import sys

import pytest

from benchmarks.harness import preload
from benchmarks.harness.gpu_state import nvml_index
from tewatch.runner.suite import PRELOAD_ENV, RunOptions


@pytest.mark.parametrize(
    ("profile", "explicit", "fork", "expected"),
    [
        ("ci", None, {}, "forkserver"),
        (
            "full",
            None,
            {"safe": True, "reason": "a child forked after the imports ran a CUDA kernel"},
            "forkserver",
        ),
        ("full", None, {"safe": False, "reason": "exit code 1"}, "spawn"),
        ("quick", None, {}, "spawn"),
        ("full", "spawn", {"safe": True}, "spawn"),
        ("ci", "spawn", {"safe": True}, "spawn"),
    ],
)
def test_forkserver_only_where_the_fork_check_passed_or_on_cpu(
    profile: str, explicit: str | None, fork: dict, expected: str, tmp_path
) -> None:
    opts = RunOptions(project=tmp_path, profile=profile, launch_method=explicit)
    assert opts.asv_launch_method(fork) == expected


def test_the_runner_and_the_suites_agree_on_the_preload_protocol() -> None:
    assert PRELOAD_ENV == preload.ENV


def test_a_child_forked_without_a_gpu_is_reported_unsafe_with_its_exit_code() -> None:
    code = (
        "import json; from benchmarks.harness import preload; "
        "print(json.dumps(preload.fork_check(with_te=False)))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert '"safe": false' in proc.stdout and "could not run a CUDA kernel (exit code 1)" in proc.stdout


def _import_suites_as(argv: list[str], then: str) -> subprocess.CompletedProcess:
    """Import the suites with the preload asked for, in a process whose argv is asv's `argv`."""
    code = (
        f"import os, sys; sys.argv = {argv!r}; "
        "os.environ['TEWATCH_PRELOAD'] = '1'; os.environ['TEWATCH_BACKENDS'] = 'te,torch-ref'; "
        f"import benchmarks; {then}"
    )
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)


def test_preload_without_transformer_engine_leaves_the_fork_server_working() -> None:
    proc = _import_suites_as(
        ["benchmark.py", "run_server"],
        "import benchmarks.quantize; import torch; "
        "assert 'benchmarks.nvfp4_emulation' in sys.modules and 'torch._dynamo' in sys.modules; "
        "assert not torch.cuda.is_initialized()",
    )
    assert proc.returncode == 0, proc.stderr[-2000:]


TORCH_FREE_THEN_TORCH = """
from benchmarks.harness.case import Case


class Free(Case):
    needs_torch = False
    params = [["torch-ref"]]

    def labels(self, p):
        return {"backend": "torch-ref", "op": "free"}

    def prepare(self, p, profile):
        raise NotImplementedError


assert "torch" not in sys.modules, "a class whose cases need no torch preloaded it"


class Bound(Free):
    needs_torch = True


assert "torch._dynamo" in sys.modules and "benchmarks.nvfp4_emulation" in sys.modules, "no preload"
"""


def test_the_fork_server_preloads_for_the_first_class_whose_cases_need_torch() -> None:
    proc = _import_suites_as(["benchmark.py", "run_server"], "\n" + TORCH_FREE_THEN_TORCH)
    assert proc.returncode == 0, proc.stderr[-2000:]


def test_discovery_imports_the_suites_without_the_preload() -> None:
    proc = _import_suites_as(
        ["benchmark.py", "discover"],
        "import benchmarks.quantize; assert 'torch' not in sys.modules, 'discovery imported torch'",
    )
    assert proc.returncode == 0, proc.stderr[-2000:]


@pytest.mark.parametrize(
    ("environ", "device", "expected"),
    [
        ({}, 0, 0),
        ({}, 1, 1),
        ({"CUDA_VISIBLE_DEVICES": "1"}, 0, 1),
        ({"CUDA_VISIBLE_DEVICES": "3,1"}, 1, 1),
        ({"CUDA_VISIBLE_DEVICES": "3", "TEWATCH_NVML_INDEX": "5"}, 0, 5),
        ({"CUDA_VISIBLE_DEVICES": "GPU-8c1e"}, 0, 0),
    ],
)
def test_nvml_index_follows_cuda_visible_devices(
    monkeypatch, environ: dict, device: int, expected: int
) -> None:
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.delenv("TEWATCH_NVML_INDEX", raising=False)
    for key, value in environ.items():
        monkeypatch.setenv(key, value)
    assert nvml_index(device) == expected


def _run_without_preload(code: str, timeout: float) -> subprocess.CompletedProcess:
    """`code` in a fresh interpreter with no preload asked for."""
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "TEWATCH_PRELOAD": ""},
    )


def test_the_state_probe_reads_nvml_alone_without_importing_torch() -> None:
    code = (
        "import sys, runpy; sys.argv = ['probe', '--state']; "
        "runpy.run_module('benchmarks.harness.probe', run_name='__main__'); "
        "assert 'torch' not in sys.modules, 'torch was imported'"
    )
    proc = _run_without_preload(code, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert '"gpu_state": {}' in proc.stdout  # no GPU here


@pytest.mark.parametrize(
    ("version", "cpu_build"),
    [
        ("2.13.0+cpu", True),
        ("2.1.0+cpu.cxx11.abi", True),
        ("2.13.0+cu128", False),
        ("2.13.0", False),
        ("", False),
    ],
)
def test_a_cpu_build_of_torch_is_told_by_its_version(monkeypatch, version: str, cpu_build: bool) -> None:
    from benchmarks.harness import probe

    monkeypatch.setattr(probe, "dist_version", lambda name: version)
    assert probe.torch_without_cuda() is cpu_build


def test_the_probe_of_a_cpu_build_says_what_torch_would_without_importing_it() -> None:
    code = (
        "import json, sys; from benchmarks.harness import probe; "
        "assert probe.torch_without_cuda(), 'this machine has a CPU build of torch'; "
        "fast = probe.probe(); assert 'torch' not in sys.modules, 'torch was imported'; "
        "probe.torch_without_cuda = lambda: False; full = probe.probe(); "
        "assert 'torch' in sys.modules; assert fast == full, (fast, full); print(json.dumps(fast))"
    )
    proc = _run_without_preload(code, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert '"model": "cpu"' in proc.stdout

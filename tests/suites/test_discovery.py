"""What asv's discovery sees of the suite: only suite classes, params chosen by the profile."""

import functools
import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SUITES = ("quantize.", "rht.", "gemm.", "linear.", "contracts.")

DISCOVER = """
import json
from asv_runner._aux import update_sys_path
from asv_runner.discovery import disc_benchmarks
root = "benchmarks"
update_sys_path(root)
print(json.dumps({b.name: [b.param_names, b.params, b.unit] for b in disc_benchmarks(root)}))
"""


def discover(profile: str, backends: str = "") -> dict:
    """What asv's discovery finds under this profile and backends: a fresh object each call."""
    return json.loads(_discovered(profile, backends))


@functools.cache  # discovery is a function of the profile, the backends and the code: one per file and pair
def _discovered(profile: str, backends: str) -> str:
    env = dict(os.environ, TEWATCH_PROFILE=profile, TEWATCH_BACKENDS=backends)
    out = subprocess.run(
        [sys.executable, "-c", DISCOVER],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    return out.stdout.strip().splitlines()[-1]


def test_no_helper_function_or_base_class_is_taken_for_a_benchmark() -> None:
    names = discover("ci", "torch-ref")
    ours = {n: v for n, v in names.items() if n.startswith(SUITES)}
    assert ours, names
    assert not [n for n in names if n.startswith(("harness.", "nvfp4_emulation."))]
    assert all(n.endswith(".track_seconds") and v[2] == "seconds" for n, v in ours.items())


def test_ci_profile_runs_torch_ref_only_and_hides_te_only_classes() -> None:
    names = discover("ci")
    assert names["quantize.Quantize.track_seconds"][1][0] == ["'torch-ref'"]
    assert "contracts.ShapeContract.track_seconds" not in names
    assert "contracts.RefParity.track_seconds" not in names


def test_full_profile_has_real_shapes_all_backends_and_every_compile_mode() -> None:
    names = discover("full")
    quantize = names["quantize.Quantize.track_seconds"][1]
    assert quantize[0] == ["'te'", "'te-ref'", "'torch-ref'"]
    assert "'16384x8192'" in quantize[2] and "'2x2x2048x5120'" in quantize[2]
    linear = names["linear.LinearFwdBwd.track_seconds"]
    assert linear[0] == ["recipe", "rank", "mode"]
    assert linear[1][2] == ["'eager'", "'default'", "'reduce-overhead'", "'max-autotune'"]
    assert "'torch-ref'" in linear[1][0]
    skipped = subprocess.run(
        [
            sys.executable,
            "-c",
            "import json; from benchmarks.linear import LinearFwdBwd as L; print(json.dumps(L.skip_params))",
        ],
        cwd=REPO,
        env=dict(os.environ, TEWATCH_PROFILE="full", TEWATCH_BACKENDS=""),
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    assert sorted(map(tuple, json.loads(skipped.stdout))) == [
        ("torch-ref", rank, mode) for rank in (2, 3, 4) for mode in ("max-autotune", "reduce-overhead")
    ]
    quick = discover("quick")["linear.LinearFwdBwd.track_seconds"][1]
    assert "'max-autotune'" not in quick[2] and "'torch-ref'" not in quick[0] and "'nvfp4-ref'" in quick[0]


def test_quick_profile_runs_sharded_distributed_cases_only_and_without_the_emulation() -> None:
    full = discover("full")["distributed.LinearTensorParallel.track_seconds"][1]
    quick = discover("quick")["distributed.LinearTensorParallel.track_seconds"][1]
    assert full[1] == ["1", "2"] and "'torch-ref'" in full[0]
    assert quick[1] == ["2"] and "'torch-ref'" not in quick[0] and "'fp8-block'" in quick[0]


def test_the_fsdp_checkpoint_case_runs_in_full_and_ci_at_world_size_2_and_not_in_quick() -> None:
    full = discover("full")["distributed.FsdpCheckpoint.track_seconds"]
    assert full[0] == ["recipe", "world_size"]
    assert full[1] == [
        ["'fp8-delayed'", "'fp8-current'", "'fp8-block'", "'mxfp8'", "'nvfp4'", "'torch-ref'"],
        ["2"],
    ]
    assert "distributed.FsdpCheckpoint.track_seconds" not in discover("quick")
    assert discover("ci")["distributed.FsdpCheckpoint.track_seconds"][1] == [["'torch-ref'"], ["2"]]


def test_the_full_profile_runs_every_general_check_and_the_quick_one_the_cheap_ones() -> None:
    def general(profile: str) -> set[str]:
        return {n.split(".")[1] for n in discover(profile) if n.startswith("checks.")}

    assert general("full") == {
        "Determinism",
        "OddShapes",
        "CpuOps",
        "NdUpdate",
        "DcpRoundTrip",
        "CompileSequence",
        "CompiledLayer",
    }
    assert general("quick") == {"Determinism", "CpuOps", "NdUpdate"}
    # the CPU op sweep, in-place updates and DCP round trips are of TE's tensors and modules
    assert general("ci") == {"Determinism", "OddShapes", "CompileSequence", "CompiledLayer"}


def test_the_host_suite_runs_quantized_recipes_at_16_tokens_or_more() -> None:
    host = discover("quick")["host.HostOverhead.track_seconds"]
    assert host[0] == ["recipe", "op", "tokens"]
    assert host[1] == [
        ["'bf16'", "'fp8-current'", "'nvfp4'", "'torch-ref'"],
        ["'linear'", "'quantize'", "'layer'"],
        ["1", "64"],
    ]
    from benchmarks.host import _is_case

    assert _is_case("bf16", "linear", 1) and not _is_case("bf16", "quantize", 64)
    assert not _is_case("fp8-current", "linear", 1) and _is_case("fp8-current", "quantize", 64)

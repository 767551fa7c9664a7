"""Rank reports -> the checks of a case record, and the timing series the case reports.

- `<tensor>_vs_single_gpu` (output, dgrad, wgrad): normwise error of every rank's tensor against its
  slice of the single-GPU result; the worst rank counts. The tolerance is the recipe's: sharding
  changes what is quantized together (per-shard weight amax, partial sums rounded before the
  reduction), so only bf16 comes close to bitwise.
- `columnwise_gather_bitwise`: where the backend keeps its gathered column-wise buffers (torch-ref), the
  bytes that differ from the quantization of the whole tensor; any byte fails.
- `compiled_vs_eager`: the compiled sharded layer against the eager one on each rank, bit for bit
  (Transformer Engine's own contract for torch.compile).
- a failed launch becomes one check: `timeout` for a deadline, `error`/`oom` with the failing rank's
  exception, filed under the step the rank was in.
"""

from __future__ import annotations

import math
from typing import Any

from benchmarks.harness.distributed.launcher import LaunchOutcome
from benchmarks.harness.distributed.scenario import Scenario
from benchmarks.harness.records import Check

TENSORS = ("output", "dgrad", "wgrad")
TOLERANCE = {"bf16": 1e-2, "fp8-current": 0.1, "fp8-block": 0.1, "mxfp8": 0.1, "nvfp4": 0.3, "torch-ref": 0.3}
PHASE_CHECK = {
    "rendezvous": "launch",
    "setup": "launch",
    "run": "launch",
    "reference": "single_gpu_reference",
    "sharded": "sharded_vs_single_gpu",
    "compiled": "compiled_vs_eager",
    "timing": "timing",
}


def _nan_last(value: float) -> float:
    """Sort key: NaN is worse than any number."""
    return math.inf if math.isnan(value) else value


def _worst(values: list[float]) -> tuple[int, float]:
    """(rank, value) of the largest value; NaN is the worst of all."""
    rank = max(range(len(values)), key=lambda r: _nan_last(values[r]))
    return rank, values[rank]


def _fmt(values: list[float]) -> str:
    return ", ".join(f"{v:.3g}" for v in values)


def _threshold(check: str, metric: str, values: list[float], tolerance: float, what: str) -> Check:
    rank, worst = _worst(values)
    ok = not math.isnan(worst) and worst <= tolerance
    message = f"{what}; per rank {_fmt(values)}"
    if not ok:
        message = f"rank {rank} exceeds {tolerance:g}: {message}"
    return Check(
        check=check,
        status="pass" if ok else "fail_accuracy",
        metric=metric,
        value=float(worst),
        tolerance=float(tolerance),
        message=message,
    )


def tolerance(scenario: Scenario) -> float:
    return TOLERANCE[scenario.recipe]


def case_checks(scenario: Scenario, reports: list[dict[str, Any]]) -> list[Check]:
    """The checks of a launch whose ranks all reported; the verdict is the most severe (first on ties)."""
    if len(reports) != scenario.world_size:
        raise ValueError(f"{len(reports)} reports for {scenario.world_size} ranks")
    reports = sorted(reports, key=lambda r: r["rank"])
    checks: list[Check] = []
    if scenario.mode != "eager":
        diffs = [r["compiled_max_abs_diff"] for r in reports]
        per_rank = [max(d.values(), key=_nan_last) for d in diffs]
        worst_tensor = [max(d.items(), key=lambda item: _nan_last(item[1]))[0] for d in diffs]
        checks.append(
            _threshold(
                "compiled_vs_eager",
                "max_abs_diff",
                per_rank,
                0.0,
                f"{scenario.mode} vs eager, largest in {', '.join(sorted(set(worst_tensor)))}",
            )
        )
    tol = tolerance(scenario)
    for tensor in TENSORS:
        values = [r["rel_l2"][tensor] for r in reports]
        checks.append(
            _threshold(
                f"{tensor}_vs_single_gpu",
                "rel_l2",
                values,
                tol,
                f"{tensor} of each rank vs its slice of the single-GPU {tensor}",
            )
        )
    gathered = sorted({name for r in reports for name in r.get("columnwise_gather", {})})
    if gathered:
        differ = [sum(r["columnwise_gather"].get(n, [0, 0])[0] for n in gathered) for r in reports]
        total = sum(r["columnwise_gather"][n][1] for r in reports for n in r["columnwise_gather"])
        checks.append(
            _threshold(
                "columnwise_gather_bitwise",
                "mismatched_bytes",
                [float(d) for d in differ],
                0.0,
                f"all-gathered column-wise {' and '.join(gathered)} vs the whole "
                f"tensor quantized, {total} bytes compared",
            )
        )
    return checks


def failure_checks(outcome: LaunchOutcome) -> list[Check]:
    """One check that says why a launch gave no reports (any rank function: a phase without a check of
    its own names the check)."""
    if outcome.status == "timeout":
        return [Check(check="launch", status="timeout", message=outcome.message)]
    failed = outcome.failure()
    error = failed.error if failed is not None and failed.error else {}
    phase = error.get("phase", "run")
    return [
        Check(
            check=PHASE_CHECK.get(phase, phase),
            status="oom" if error.get("status") == "oom" else "error",
            exception_class=error.get("exception_class") or "RankCrashed",
            message=outcome.message,
            traceback_head=error.get("traceback_head"),
        )
    ]


def slowest_rank_samples(reports: list[dict[str, Any]]) -> list[float]:
    """Sample i of the case: the longest of the ranks' sample i (the step ends when the last rank does)."""
    per_rank = [r["samples"] for r in reports]
    lengths = {len(s) for s in per_rank}
    if len(lengths) != 1:
        raise ValueError(f"ranks timed different numbers of samples: {sorted(lengths)}")
    return [max(column) for column in zip(*per_rank, strict=True)]


def metrics(scenario: Scenario, reports: list[dict[str, Any]]) -> dict[str, tuple[float, str]]:
    """Derived series of the case: compile time and graph breaks of the worst rank."""
    out: dict[str, tuple[float, str]] = {}
    if scenario.mode != "eager":
        out["compile_seconds"] = (max(r["compile_seconds"] for r in reports), "seconds")
        out["graph_breaks"] = (float(max(r["graph_breaks"] for r in reports)), "count")
    return out


def gpu_state(reports: list[dict[str, Any]]) -> dict[str, list[Any]]:
    """The ranks' NVML samples (before and after timing), rank after rank, as the record keeps them."""
    from benchmarks.harness.gpu_state import collect_series

    return collect_series(
        [s for r in sorted(reports, key=lambda r: r["rank"]) for s in r.get("gpu_state", [])]
    )

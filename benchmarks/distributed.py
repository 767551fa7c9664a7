"""te.Linear with tensor and sequence parallelism across process ranks, at world sizes 1 and 2.

Each case launches one process per rank (NCCL on GPUs, gloo on CPU; see harness/distributed): every
rank checks its shard of output, dgrad and wgrad against the single-GPU result within the recipe's
tolerance, a compiled case also checks compiled == eager bit for bit, and then every rank times
forward+backward; sample i of the case is the slowest rank's sample i. World size and interconnect are
labels of the case (world size also a param, so series of different sizes never mix).

Recipes: bf16, FP8 current and block scaling, native NVFP4 (te; gated on sm_100+, so `unsupported` on
Hopper) and torch-ref, the same layer over the project's NVFP4 emulation, which CI runs on CPU.

FsdpCheckpoint (full profile only; one-shot): at world size 2, a te.Linear whose weight is quantized at
init (the recipes of checks.DcpRoundTrip), sharded with FSDP2, one forward+backward step, then saved
through torch.distributed.checkpoint (`_extra_state` included) and loaded into a freshly built sharded
te.Linear: every rank's buffers bit for bit and its forward pass equal, each a check. torch-ref runs the
emulated Linear the same way on CPU with gloo.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, ClassVar

from benchmarks.harness import gates, records
from benchmarks.harness.dcp_round_trip import RECIPES as DCP_RECIPES
from benchmarks.harness.distributed import params as dist_params
from benchmarks.harness.distributed import topology, verdict
from benchmarks.harness.params import invalid_combinations
from benchmarks.harness.profiles import current_profile, selected_backends

BACKEND_OF = {"bf16": "te", "fp8-current": "te", "fp8-block": "te", "nvfp4": "te", "torch-ref": "torch-ref"}
INPUT_RANK = 3  # (S, B, K): the sequence dimension is the one sequence parallelism splits
CASE = "distributed.LinearTensorParallel"
_DIST = dist_params.current()


class LaunchFailed(RuntimeError):
    """The ranks did not all report (timeout, a rank's exception, a crash); the record says which."""


class _LaunchedCase:
    """What the launched cases share: the record written with its checks, and the samples asv reads."""

    record: records.CaseRecord
    samples: list[float]

    def _gate(self, backend: str, recipe: str, world_size: int, device: str) -> None:
        """Record and raise (asv's skip) when the case cannot run here."""
        try:
            reason = unsupported_reason(backend, recipe, world_size, device)
        except Exception as exc:  # Transformer Engine cannot be asked: an error, not a gate
            self._finish(records.from_exception("capability", exc))
            raise
        if reason:
            self._finish(records.Check(check="capability", status="unsupported", reason=reason))
            raise NotImplementedError(reason)

    def _launch(self, rank_fn: Callable[..., Any], job: Any, world_size: int, device: str) -> Any:
        """The ranks' outcome; a launch that fails, or ranks that do not all report, are recorded and raised."""
        from benchmarks.harness.distributed.launcher import launch

        try:
            outcome = launch(
                rank_fn,
                job,
                world_size,
                device,
                deadline_s=_DIST.deadline_s,
                collective_timeout_s=_DIST.deadline_s + 60,
            )
        except Exception as exc:
            self._finish(records.from_exception("launch", exc))
            raise
        if outcome.status != "ok":
            self._finish(*verdict.failure_checks(outcome))
            raise LaunchFailed(outcome.message)
        return outcome

    def _finish(self, *checks: records.Check) -> None:
        for check in checks:
            self.record.add(check)
        records.write_record(self.record)

    def track_seconds(self, *_values: Any) -> dict[str, Any]:
        return {"samples": self.samples, "number": 1}

    track_seconds.unit = "seconds"  # type: ignore[attr-defined]


class LinearTensorParallel(_LaunchedCase):
    param_names: ClassVar[list[str]] = ["recipe", "world_size", "parallel", "sequence_parallel", "mode"]
    params: ClassVar[list[list[Any]]] = [
        [
            r
            for r, b in BACKEND_OF.items()
            if b in selected_backends() and (r != "torch-ref" or _DIST.torch_ref_modes)
        ],
        list(_DIST.world_sizes),
        _DIST.parallel_values,
        _DIST.sequence_parallel_values,
        list(_DIST.modes),
    ]
    skip_params = invalid_combinations(params, _DIST.is_case)
    # asv's own limit stays above the launch deadline, so a hang is recorded by the launcher
    timeout = _DIST.deadline_s + 60

    def setup(self, recipe: str, world_size: int, parallel: str, sequence_parallel: bool, mode: str) -> None:
        from benchmarks.harness.distributed.scenario import Scenario
        from benchmarks.harness.distributed.worker import run_scenario

        p = dict(zip(self.param_names, (recipe, world_size, parallel, sequence_parallel, mode), strict=False))
        device = current_profile().device
        backend = BACKEND_OF[recipe]
        self.record = records.CaseRecord(case=CASE, params=p, labels=labels(p, device))
        print(f"{records.CASE_MARKER}{self.record.case_id}", file=sys.stderr, flush=True)
        self._gate(backend, recipe, world_size, device)
        scenario = Scenario(
            backend=backend,
            recipe=recipe,
            parallel_mode=parallel,
            sequence_parallel=sequence_parallel,
            mode=mode,
            world_size=world_size,
            device=device,
            shape=_DIST.shape,
            out_features=_DIST.out_features,
            timing=_DIST.timing,
        )
        outcome = self._launch(run_scenario, scenario, world_size, device)
        for name, (value, unit) in verdict.metrics(scenario, outcome.reports).items():
            self.record.metric(name, value, unit)
        self.record.gpu_state = verdict.gpu_state(outcome.reports)
        self._finish(*verdict.case_checks(scenario, outcome.reports))
        self.samples = verdict.slowest_rank_samples(outcome.reports)


FSDP_CASE = "distributed.FsdpCheckpoint"
FSDP_WORLD_SIZE = 2

if _DIST.fsdp_checkpoint:

    class FsdpCheckpoint(_LaunchedCase):
        param_names: ClassVar[list[str]] = ["recipe", "world_size"]
        params: ClassVar[list[list[Any]]] = [
            (list(DCP_RECIPES) if "te" in selected_backends() else [])
            + (["torch-ref"] if "torch-ref" in selected_backends() else []),
            [FSDP_WORLD_SIZE],
        ]
        timeout = _DIST.deadline_s + 60

        def setup(self, recipe: str, world_size: int) -> None:
            from benchmarks.harness.distributed import fsdp_checkpoint

            device = current_profile().device
            backend = "torch-ref" if recipe == "torch-ref" else "te"
            self.record = records.CaseRecord(
                case=FSDP_CASE,
                params={"recipe": recipe, "world_size": world_size},
                one_shot=True,
                labels={
                    "backend": backend,
                    "recipe": recipe,
                    "op": "fsdp_dcp_round_trip",
                    "world_size": world_size,
                    "interconnect": topology.interconnect(world_size, device),
                },
            )
            print(f"{records.CASE_MARKER}{self.record.case_id}", file=sys.stderr, flush=True)
            self._gate(backend, recipe, world_size, device)
            assert _DIST.fsdp_checkpoint is not None  # the class exists only where the profile sizes it
            in_f, out_f, tokens = _DIST.fsdp_checkpoint
            job = fsdp_checkpoint.FsdpJob(
                backend=backend,
                recipe=recipe,
                device=device,
                world_size=world_size,
                in_features=in_f,
                out_features=out_f,
                tokens=tokens,
            )
            outcome = self._launch(fsdp_checkpoint.run_fsdp_checkpoint, job, world_size, device)
            self._finish(*fsdp_checkpoint.case_checks(outcome.reports))
            self.samples = [max(r["seconds"] for r in outcome.reports)]


def labels(p: dict[str, Any], device: str) -> dict[str, Any]:
    return {
        "backend": BACKEND_OF[p["recipe"]],
        "recipe": p["recipe"],
        "mode": p["mode"],
        "rank": INPUT_RANK,
        "op": "linear_tp",
        "world_size": p["world_size"],
        "parallel_mode": p["parallel"],
        "sequence_parallel": p["sequence_parallel"],
        "interconnect": topology.interconnect(p["world_size"], device),
    }


def unsupported_reason(backend: str, recipe: str, world_size: int, device: str) -> str | None:
    caps = gates.current_capabilities(needs_te=backend != "torch-ref")
    reason = gates.unsupported_reason(backend, "nvfp4" if backend == "torch-ref" else recipe, caps, device)
    if reason or device != "cuda":
        return reason
    import torch

    visible = torch.cuda.device_count()
    return None if visible >= world_size else f"{world_size} ranks need {world_size} GPUs; {visible} visible"

"""Import torch (Dynamo included) and Transformer Engine once in asv's fork server, so that no forked case pays for them.

`tewatch run` chooses asv's forkserver launch method on a GPU only after its probe has shown, with
`fork_check`, that a child forked after these imports still runs CUDA work: the imports must leave
the parent without a CUDA context (PYTORCH_NVML_BASED_CUDA_CHECK keeps `torch.cuda.is_available()`
from creating one). It then sets TEWATCH_PRELOAD=1 for the benchmark processes.
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import Any

ENV = "TEWATCH_PRELOAD"
FORK_SAFE_ENV = {"PYTORCH_NVML_BASED_CUDA_CHECK": "1"}


class PreloadInitialisedCuda(RuntimeError):
    """An import created a CUDA context: children forked from this process could not use the GPU."""


def preload(with_te: bool) -> None:
    """Import torch, the emulation and (with_te) Transformer Engine with its namespace of te_ops."""
    import torch
    import torch._dynamo  # torch.profiler's first pass imports it: 4.6 s on a busy 2-core machine

    import benchmarks.nvfp4_emulation  # noqa: F401
    from benchmarks.harness import te_ops

    if with_te:
        # every case that needs TE meets and records the same error itself
        with contextlib.suppress(Exception):
            te_ops.loaded()
    if torch.cuda.is_initialized():
        raise PreloadInitialisedCuda("importing torch and Transformer Engine initialised CUDA")


def in_fork_server() -> bool:
    """Whether this process is asv's fork server (`benchmark.py run_server`). asv's discovery process
    imports the suites too but runs no case: Dynamo and TE imported there were time lost on every run."""
    return sys.argv[1:2] == ["run_server"]


_preloaded: list[bool] = []


def preload_for_case(needs_torch: bool) -> None:
    """Called as each suite class (benchmarks.harness.case.Case) is defined: in asv's fork server, where
    the preload is asked for, the first class whose cases need torch preloads; a suite whose cases never
    import torch (`Case.needs_torch = False`) leaves the fork server without it."""
    if needs_torch and not _preloaded and os.environ.get(ENV) == "1" and in_fork_server():
        _preloaded.append(True)
        from benchmarks.harness.profiles import selected_backends

        preload(with_te=any(b != "torch-ref" for b in selected_backends()))


def fork_check(with_te: bool) -> dict[str, Any]:
    """Preload here, then fork a child that runs a CUDA kernel: {"safe": bool, "reason": str}.

    Call it before anything in this process touches CUDA (the probe's capability checks do).
    """
    try:
        preload(with_te)
    except Exception as exc:
        return {"safe": False, "reason": f"preload failed: {type(exc).__name__}: {exc}"}
    pid = os.fork()
    if pid == 0:  # the child: exit code is the answer, nothing else may run here
        code = 1
        try:
            import torch

            ones = torch.ones(1024, device="cuda")
            code = 0 if int(ones.sum().item()) == 1024 else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    if code == 0:
        return {"safe": True, "reason": "a child forked after the imports ran a CUDA kernel"}
    return {
        "safe": False,
        "reason": f"a child forked after the imports could not run a CUDA kernel (exit code {code})",
    }

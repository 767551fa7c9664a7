"""`python -m benchmarks.harness.probe`: what `tewatch run` needs to know about this interpreter and GPU.

Prints one JSON object: software versions, the installed Transformer Engine's version and commit,
the GPU (model, compute capability, memory, clock and power limits), its state now, TE's
capability answers, and whether cases may be forked from a process that has imported torch and TE;
with `--state`, the GPU state alone, from NVML. Run in the benchmark interpreter, so the service never
imports torch.
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any

from benchmarks.harness import gates, preload
from benchmarks.harness.gpu_state import Nvml, dist_version, software_versions

_LOCAL_HASH = re.compile(r"\+(?:g|git)?([0-9a-f]{7,40})(?:\.|$)")


def te_commit(version: str, direct_url: str | None) -> str:
    """The git commit of an installed TE, when it says: pip's direct_url.json (installed from git),
    or a local version label such as 2.20.0.dev0+d0067d0. '' for a release wheel."""
    if direct_url:
        try:
            commit = json.loads(direct_url).get("vcs_info", {}).get("commit_id", "")
        except json.JSONDecodeError:
            commit = ""
        if commit:
            return commit
    match = _LOCAL_HASH.search(version)
    return match.group(1) if match else ""


def _te_direct_url() -> str | None:
    import importlib.metadata

    for name in ("transformer_engine", "transformer-engine"):
        try:
            return importlib.metadata.distribution(name).read_text("direct_url.json")
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


NO_GPU: dict[str, Any] = {"model": "cpu", "compute_capability": "", "count": 0, "memory_mb": None}
_CPU_BUILD = re.compile(r"\+cpu(?:\.|$)")


def torch_without_cuda() -> bool:
    """Whether the installed torch is a CPU build (its version's local label `+cpu`), for which no GPU can
    exist: read from its metadata, without importing it (5 s of CPU on a 2-core machine)."""
    return bool(_CPU_BUILD.search(dist_version("torch")))


def gpu_info(torch: Any, nvml: Nvml | None) -> dict[str, Any]:
    if not torch.cuda.is_available():
        return dict(NO_GPU)
    props = torch.cuda.get_device_properties(0)
    info: dict[str, Any] = {
        "model": props.name,
        "compute_capability": f"{props.major}.{props.minor}",
        "count": torch.cuda.device_count(),
        "memory_mb": props.total_memory // 2**20,
        "multiprocessors": props.multi_processor_count,
        "l2_bytes": getattr(props, "L2_cache_size", None),
    }
    if nvml is not None:
        info.update(nvml.static_info())
    return info


def probe() -> dict[str, Any]:
    if torch_without_cuda():
        return cpu_probe()
    import torch

    # before anything here creates a CUDA context: can asv fork cases from a process holding TE?
    fork = (
        preload.fork_check(with_te=True) if torch.cuda.is_available() else {"safe": True, "reason": "no GPU"}
    )
    # TE first: loading cuDNN through torch before TE imports can bind the wrong libcudnn for TE
    try:
        capabilities = gates.capabilities_from_te().to_json()
        te_error = ""
    except Exception as exc:  # TE missing or broken: torch-ref still runs, te cases become errors
        te_error = f"{type(exc).__name__}: {exc}"
        capabilities = gates.capabilities_without_te(f"transformer_engine unavailable: {te_error}").to_json()
    nvml = Nvml.open() if torch.cuda.is_available() else None
    versions = software_versions(torch, nvml)
    versions["te_commit"] = te_commit(versions["te"], _te_direct_url()) if versions["te"] else ""
    return {
        "versions": versions,
        "gpu": gpu_info(torch, nvml),
        "gpu_state": nvml.sample() if nvml else {},
        "capabilities": capabilities,
        "te_error": te_error,
        "fork": fork,
    }


def cpu_probe() -> dict[str, Any]:
    """What `probe` finds with a CPU build of torch, without importing torch or TE: no GPU, so no CUDA
    version, no cuDNN, no capability to ask TE about, and nothing to check before forking."""
    versions = software_versions(None, None)
    versions["te_commit"] = te_commit(versions["te"], _te_direct_url()) if versions["te"] else ""
    return {
        "versions": versions,
        "gpu": dict(NO_GPU),
        "gpu_state": {},
        "capabilities": gates.capabilities_without_cuda().to_json(),
        "te_error": "",
        "fork": {"safe": True, "reason": "no GPU"},
    }


def gpu_state_now() -> dict[str, Any]:
    """Only NVML's reading of the GPU (no torch, no TE): what a run records after its cases."""
    nvml = Nvml.open()
    return {"gpu_state": nvml.sample() if nvml else {}}


if __name__ == "__main__":
    json.dump(gpu_state_now() if sys.argv[1:] == ["--state"] else probe(), sys.stdout, indent=1, default=str)
    sys.stdout.write("\n")

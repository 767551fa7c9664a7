"""asv's machine file plus the GPU keys of docs/records.md."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def machine_file() -> Path:
    return Path.home() / ".asv-machine.json"


def gpu_keys(probe: dict[str, Any]) -> dict[str, str]:
    """The extra machine keys; asv keeps machine values as strings."""
    gpu, versions = probe["gpu"], probe["versions"]
    return {
        "gpu_model": str(gpu.get("model") or "cpu"),
        "compute_capability": str(gpu.get("compute_capability") or ""),
        "gpu_count": str(gpu.get("count") or 0),
        "gpu_memory_mb": "" if gpu.get("memory_mb") is None else str(gpu["memory_mb"]),
        "driver": str(versions.get("driver", "")),
        "cuda": str(versions.get("cuda", "")),
        "cublaslt": str(versions.get("cublaslt", "")),
        "cudnn": str(versions.get("cudnn", "")),
    }


def add_keys(name: str, keys: dict[str, str], path: Path | None = None) -> None:
    """Merge keys into the machine entry that `asv machine --yes --machine NAME` wrote."""
    path = path or machine_file()
    data = json.loads(path.read_text())
    if name not in data:
        raise KeyError(f"{path} has no machine {name!r}")
    data[name].update(keys)
    path.write_text(json.dumps(data, indent=4, sort_keys=True))

"""How the GPUs in use are linked, read from `nvidia-smi topo -m`.

The matrix names one link per pair of devices: `NV<n>` (NVLink, n links), `PIX`, `PXB`, `PHB`, `NODE`
or `SYS` (PCIe paths, from one switch to across sockets), `X` on the diagonal. A case's interconnect is
the slowest link between any two of its GPUs, so a series never mixes NVLink and PCIe timings.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_DEVICE = re.compile(r"^(GPU|NIC)\d+$")
# slowest first: a pair's rank in this list orders links when several pairs are in use
_PCIE_ORDER = ("SYS", "NODE", "PHB", "PXB", "PIX")
LOOPBACK = "loopback"  # gloo on CPU
SINGLE = "none"  # one GPU: no link in use
UNKNOWN = "unknown"


class TopologyError(ValueError):
    """The text is not an `nvidia-smi topo -m` matrix."""


def parse_topology(text: str) -> dict[tuple[int, int], str]:
    """{(i, j): link} for every pair of GPUs i != j in the matrix."""
    rows = [_ANSI.sub("", line).split() for line in text.splitlines()]
    # the header names the columns (GPU0 GPU1 ... NIC0 ... CPU Affinity); row GPU0 has X beside its name
    start = next((i for i, r in enumerate(rows) if r[:1] == ["GPU0"] and r[1:2] != ["X"]), None)
    if start is None:
        raise TopologyError("no header row starting with GPU0")
    columns = []
    for token in rows[start]:
        if not _DEVICE.match(token):
            break
        columns.append(token)
    links: dict[tuple[int, int], str] = {}
    for cells in rows[start + 1 :]:
        if not cells or not re.fullmatch(r"GPU\d+", cells[0]):
            continue
        if len(cells) < 1 + len(columns):
            raise TopologyError(f"row {cells[0]} has {len(cells) - 1} cells for {len(columns)} devices")
        row = int(cells[0][3:])
        for name, cell in zip(columns, cells[1:], strict=False):
            if name.startswith("GPU") and int(name[3:]) != row:
                links[(row, int(name[3:]))] = cell
    if not links and len([c for c in columns if c.startswith("GPU")]) > 1:
        raise TopologyError("no GPU-to-GPU cells")
    return links


def _speed_key(link: str) -> tuple[int, int]:
    """Smaller is slower: PCIe paths by distance, then NVLink by link count."""
    if link.startswith("NV") and link[2:].isdigit():
        return (len(_PCIE_ORDER), int(link[2:]))
    if link in _PCIE_ORDER:
        return (_PCIE_ORDER.index(link), 0)
    return (-1, 0)  # an unknown word sorts as the slowest


def slowest_link(links: dict[tuple[int, int], str], gpus: list[int]) -> str:
    """The slowest link among the pairs of `gpus` (physical indices); SINGLE for one GPU."""
    if len(gpus) < 2:
        return SINGLE
    pairs = [(a, b) for a in gpus for b in gpus if a != b]
    missing = [p for p in pairs if p not in links]
    if missing:
        raise TopologyError(f"the matrix has no link for GPU pair {missing[0]}")
    return min((links[p] for p in pairs), key=_speed_key)


def visible_gpu_indices(count: int, environ: dict[str, str] | None = None) -> list[int]:
    """The physical (nvidia-smi) indices of CUDA devices 0..count-1 under CUDA_VISIBLE_DEVICES."""
    env = os.environ if environ is None else environ
    visible = env.get("CUDA_VISIBLE_DEVICES", "").strip()
    if not visible:
        return list(range(count))
    entries = [v.strip() for v in visible.split(",") if v.strip()]
    if not all(v.isdigit() for v in entries[:count]):
        raise TopologyError(f"CUDA_VISIBLE_DEVICES={visible!r} names devices by UUID; cannot map to indices")
    return [int(v) for v in entries[:count]]


def interconnect(world_size: int, device: str, timeout_s: float = 30.0) -> str:
    """The label of the link between the GPUs a case of `world_size` ranks uses."""
    if device != "cuda":
        return LOOPBACK
    if world_size < 2:
        return SINGLE
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return UNKNOWN
    try:
        proc = subprocess.run(
            [smi, "topo", "-m"], check=False, capture_output=True, text=True, timeout=timeout_s
        )
        if proc.returncode != 0:
            return UNKNOWN
        return slowest_link(parse_topology(proc.stdout), visible_gpu_indices(world_size))
    except (subprocess.TimeoutExpired, TopologyError, OSError):
        return UNKNOWN

"""The environment of every process the distributed suite starts.

The lent multi-GPU machines forbid NVLink multicast (NVLS): a program that uses it can put the host's
shared GPUs out of service. NCCL, PyTorch's symmetric memory and NVSHMEM each have their own switch.
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping

NO_MULTICAST = {
    "NCCL_NVLS_ENABLE": "0",
    "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
    "NVSHMEM_DISABLE_NVLS": "1",
}


def apply_no_multicast(environ: MutableMapping[str, str] | None = None) -> None:
    """Set the three switches (overriding any other value) in `environ`, by default os.environ."""
    (os.environ if environ is None else environ).update(NO_MULTICAST)


def multicast_settings(environ: MutableMapping[str, str] | None = None) -> dict[str, str | None]:
    env = os.environ if environ is None else environ
    return {name: env.get(name) for name in NO_MULTICAST}

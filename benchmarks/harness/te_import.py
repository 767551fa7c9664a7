"""Import Transformer Engine's PyTorch side without its JAX side.

TE's top-level package tries `import jax` after the PyTorch extension and skips JAX on ImportError.
Where JAX is installed but TE's JAX extension is not (the GPU image here), that import pays for all
of JAX in every benchmark process and then fails anyway. asv starts a process per case, so the
import is blocked for the duration of TE's import, then unblocked.
"""

from __future__ import annotations

import os
import sys
from types import ModuleType

KEEP_JAX_ENV = "TEWATCH_IMPORT_JAX"
# TE's attention keeps to deterministic algorithms where this is 0 (read when a layer runs)
TE_DETERMINISM_ENV = "NVTE_ALLOW_NONDETERMINISTIC_ALGO"


def keep_attention_deterministic() -> None:
    """Unless the user set it: the same inputs give the same gradients, which the training trajectories
    and the offload suite's comparison of offloaded against plain gradients rely on."""
    os.environ.setdefault(TE_DETERMINISM_ENV, "0")


def import_transformer_engine() -> ModuleType:
    """`transformer_engine.pytorch`, imported with `import jax` failing fast unless JAX is loaded."""
    block = "jax" not in sys.modules and os.environ.get(KEEP_JAX_ENV) != "1"
    if block:
        sys.modules["jax"] = None  # type: ignore[assignment]  # makes `import jax` raise ImportError
    try:
        import transformer_engine.pytorch as te
    finally:
        if block and sys.modules.get("jax", 0) is None:
            del sys.modules["jax"]
    return te

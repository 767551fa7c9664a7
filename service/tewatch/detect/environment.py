"""Environment shifts: a change point whose commit coincides with a new driver, CUDA, torch or TE stack."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

# The software below the code under test; the TE commit itself is the code under test, not context.
ENVIRONMENT_KEYS = ("driver", "cuda", "cublaslt", "cudnn", "torch", "te_version")


def environment_changes(before: Mapping[str, str], after: Mapping[str, str]) -> dict[str, list[str]]:
    """{key: [old, new]} for every environment key whose (non-empty) value differs."""
    changes = {}
    for key in ENVIRONMENT_KEYS:
        old, new = before.get(key) or "", after.get(key) or ""
        if old and new and old != new:
            changes[key] = [old, new]
    return changes


def environment_shift(
    environments: Sequence[Mapping[str, str]], first_possible: int, last_possible: int
) -> tuple[int, dict[str, list[str]]] | None:
    """The environment change inside a change point's possible range, if any: (index of the first point
    on the new environment, {key: [old, new]}). A change point there is an environment shift."""
    for index in range(max(first_possible, 1), min(last_possible, len(environments) - 1) + 1):
        changes = environment_changes(environments[index - 1], environments[index])
        if changes:
            return index, changes
    return None

"""The ops user code and torch.testing.assert_close reach on a quantized tensor moved to the CPU, each
one a check: it computes and equals the same op on the dequantized values, or it is an error that
carries its exception (a RecursionError on `+ 0` was TE's)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from benchmarks.harness import records
from benchmarks.harness.numerics import max_abs_difference


def _values(result: Any) -> Any:
    import torch

    if hasattr(result, "dequantize"):
        result = result.dequantize()
    return torch.as_tensor(result).float()


def _ops() -> dict[str, tuple[Callable[[Any], Any], Callable[[Any], Any]]]:
    """name -> (the op on the quantized CPU tensor, the same op on its dequantized values)."""
    import torch

    def assert_close(t: Any) -> Any:
        torch.testing.assert_close(t, t)
        return torch.zeros(())

    return {
        "add": (lambda t: t + 0, lambda e: e + 0),
        "mul": (lambda t: t * 1, lambda e: e * 1),
        "clone": (lambda t: t.clone(), lambda e: e.clone()),
        "equal": (lambda t: torch.tensor(float(torch.equal(t, t))), lambda e: torch.tensor(1.0)),
        "assert_close": (assert_close, lambda e: torch.zeros(())),
        "to_float32": (lambda t: t.to(torch.float32), lambda e: e),
        "reshape": (lambda t: t.reshape(-1), lambda e: e.reshape(-1)),
        "cat": (lambda t: torch.cat([t, t]), lambda e: torch.cat([e, e])),
        "index": (lambda t: t[0], lambda e: e[0]),
        "dequantize": (lambda t: t.dequantize(), lambda e: e),
    }


def cpu_op_checks(tensor: Any, dequantized: Any) -> list[records.Check]:
    checks = []
    for name, (op, same_op) in _ops().items():
        check = f"cpu_{name}"
        try:
            got = _values(op(tensor))
        except Exception as exc:  # every failure of an op is that op's verdict
            checks.append(records.from_exception(check, exc))
            continue
        want = same_op(dequantized).float()
        diff = max_abs_difference(got, want) if got.shape == want.shape else float("nan")
        checks.append(records.compare(check, "max_abs_diff", diff, 0.0))
    return checks

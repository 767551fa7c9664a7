"""Correctness records: one JSON file per case, in the sidecar layout of docs/records.md.

The benchmark process writes `<TEWATCH_RECORD_DIR>/cases/<case_id>.json`; `tewatch run` moves the
folder beside asv's results file once the run is over.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import tempfile
import traceback
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

CASE_SCHEMA = "tewatch.case/1"
RECORD_DIR_ENV = "TEWATCH_RECORD_DIR"
CASE_MARKER = "tewatch-case: "
STATUSES = ("pass", "fail_accuracy", "error", "unsupported", "timeout", "oom")
# the verdict of a case is its most severe check
_SEVERITY = {"pass": 0, "unsupported": 1, "fail_accuracy": 2, "timeout": 3, "oom": 3, "error": 4}
TRACEBACK_HEAD_LINES = 12
# units of the error metrics a check writes beside its verdict (docs/records.md)
ERROR_UNITS = {"max_abs": "abs error", "rel_l2": "rel error", "sqnr_db": "dB"}


def canonical_params(params: dict[str, Any]) -> str:
    return json.dumps(params, sort_keys=True, separators=(",", ":"))


def case_id(case: str, params: dict[str, Any]) -> str:
    digest = hashlib.sha1(canonical_params(params).encode()).hexdigest()[:12]
    return f"{case}-{digest}"


def utc_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class Check:
    """One correctness check of a case."""

    check: str
    status: str
    metric: str | None = None
    value: float | None = None
    tolerance: float | None = None
    exception_class: str | None = None
    message: str | None = None
    traceback_head: str | None = None
    reason: str | None = None
    details: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"unknown verdict status {self.status!r}")

    def to_json(self) -> dict[str, Any]:
        out = {k: v for k, v in self.__dict__.items() if v is not None}
        if self.value is not None and not math.isfinite(self.value):
            out.pop("value")  # JSON has no NaN/inf: keep the fact in words
            out["message"] = f"{self.metric} is {self.value}"
        return out


def compare(check: str, metric: str, value: float, tolerance: float, **details: Any) -> Check:
    """pass when value <= tolerance (NaN never passes), else fail_accuracy."""
    ok = value == value and value <= tolerance
    return Check(
        check=check,
        status="pass" if ok else "fail_accuracy",
        metric=metric,
        value=float(value),
        tolerance=float(tolerance),
        details=details or None,
    )


# what torch's CPU allocator raises (a RuntimeError) when the host has no memory left for a tensor
CPU_ALLOCATOR_OOM = "DefaultCPUAllocator: can't allocate memory"


def _is_oom(exc: BaseException) -> bool:
    if type(exc).__name__ == "OutOfMemoryError":
        return True
    return isinstance(exc, MemoryError) or CPU_ALLOCATOR_OOM in str(exc)


def from_exception(check: str, exc: BaseException) -> Check:
    """An `error` (or `oom`) check carrying the exception's class, message and traceback head."""
    tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    lines = tb.rstrip().splitlines()
    head = "\n".join(lines[:TRACEBACK_HEAD_LINES] + (["...", *lines[-4:]] if len(lines) > 16 else lines[12:]))
    message = str(exc) or repr(exc)
    return Check(
        check=check,
        status="oom" if _is_oom(exc) else "error",
        exception_class=type(exc).__name__,
        message=message[:4000],
        traceback_head=head[:8000],
    )


@dataclass
class CaseRecord:
    case: str
    params: dict[str, Any]
    labels: dict[str, Any]
    checks: list[Check] = field(default_factory=list)
    metrics: dict[str, dict[str, Any]] = field(default_factory=dict)
    gpu_state: dict[str, list[Any]] = field(default_factory=dict)
    # perturbation name -> calls of it during the timed samples (TEWATCH_PERTURB runs only)
    perturbations: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    # a check timed once as a by-product: A/B rounds do not repeat it
    one_shot: bool = False
    # the kernel table of the profiler pass (benchmarks.harness.kernels), None where none ran
    kernels: dict[str, Any] | None = None
    # a training case's loss and gradient norm per optimizer step (docs/records.md, "Trajectory")
    trajectory: dict[str, Any] | None = None

    @property
    def case_id(self) -> str:
        return case_id(self.case, self.params)

    def add(self, check: Check) -> Check:
        self.checks.append(check)
        return check

    def metric(self, name: str, value: float, unit: str, samples: list[float] | None = None) -> None:
        self.metrics[name] = {"value": float(value), "unit": unit}
        if samples:
            self.metrics[name]["samples"] = [float(s) for s in samples]

    def errors(self, against: str, values: dict[str, float]) -> None:
        """A comparison's error metrics, each named `<against>_<kind>` (`output_vs_fp32_rel_l2`); a
        non-finite one is left out and named in the notes."""
        for kind, value in values.items():
            if math.isfinite(value):
                self.metric(f"{against}_{kind}", value, ERROR_UNITS[kind])
            else:
                self.notes.append(f"{against}_{kind} is {value}")

    def verdict(self) -> Check:
        if not self.checks:
            raise ValueError(f"case {self.case} {self.params} has no check")
        # stable: the first of the most severe checks
        return max(self.checks, key=lambda c: _SEVERITY[c.status])

    def to_json(self) -> dict[str, Any]:
        verdict = self.verdict()
        return {
            "schema": CASE_SCHEMA,
            "case": self.case,
            "params": self.params,
            "labels": self.labels,
            "verdict": verdict.to_json(),
            "extra_checks": [c.to_json() for c in self.checks if c is not verdict],
            "metrics": self.metrics,
            "gpu_state": self.gpu_state,
            **({"perturbations": self.perturbations} if self.perturbations else {}),
            **({"notes": self.notes} if self.notes else {}),
            **({"one_shot": True} if self.one_shot else {}),
            **({"kernels": self.kernels} if self.kernels else {}),
            **({"trajectory": self.trajectory} if self.trajectory is not None else {}),
            "recorded_at": utc_now(),
        }


def record_dir() -> Path | None:
    raw = os.environ.get(RECORD_DIR_ENV)
    return Path(raw) if raw else None


def write_record(record: CaseRecord, directory: Path | None = None) -> Path | None:
    """Write atomically (a crash mid-write never leaves half a file); None when no folder is set."""
    directory = directory or record_dir()
    if directory is None:
        return None
    cases = directory / "cases"
    cases.mkdir(parents=True, exist_ok=True)
    target = cases / f"{record.case_id}.json"
    text = json.dumps(record.to_json(), indent=1, sort_keys=True, allow_nan=False, default=str)
    fd, tmp = tempfile.mkstemp(dir=cases, prefix=".tmp-", suffix=".json")
    with os.fdopen(fd, "w") as fh:
        fh.write(text)
    os.replace(tmp, target)
    return target

"""The sidecar folder beside a results file (docs/records.md): run.json, cases/, asv-stderr.log.gz.

The suites write case records while they run; here the run is closed: cases that asv failed without
a record get one built from the error text asv printed, and run.json gets the run's context.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tewatch.core.statuses import SEVERITY
from tewatch.runner.results import CaseResult

CASE_MARKER = "tewatch-case: "
CASE_SCHEMA = "tewatch.case/1"
RUN_SCHEMA = "tewatch.run/1"
_TIMEOUT = re.compile(r"asv: benchmark timed out \(timeout ([0-9.]+)s\)")
_PROGRESS = re.compile(r"^\s*\[\s*\d+(?:\.\d+)?%\]")
# the last line of a traceback: an optional lower-case module path, a CamelCase class, the message
_EXCEPTION_LINE = re.compile(r"^\s*((?:[a-z_]\w*\.)*[A-Z]\w*)(?::\s+(.*))?$")


def utc(ts: datetime) -> str:
    return ts.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def split_by_case(log: str) -> dict[str, str]:
    """The text printed by each case's process, keyed by the case id its marker line names."""
    segments: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in log.splitlines():
        stripped = line.strip()
        if stripped.startswith(CASE_MARKER):
            current = segments.setdefault(stripped[len(CASE_MARKER) :].strip(), [])
            continue
        if _PROGRESS.match(line):
            current = None
            continue
        if current is not None:
            current.append(line)
    return {cid: "\n".join(lines).strip() for cid, lines in segments.items()}


def failure_check(text: str) -> dict[str, Any]:
    """A verdict for a case asv failed, from the text its process printed."""
    timeout = _TIMEOUT.search(text)
    if timeout:
        return {
            "check": "asv_run",
            "status": "timeout",
            "message": f"benchmark timed out after {timeout.group(1)} s",
            "traceback_head": _head(text),
        }
    exc_class, message = "BenchmarkFailed", "asv reported a failure without an exception"
    for line in reversed(text.splitlines()):
        match = _EXCEPTION_LINE.match(line)
        if match:
            exc_class = match.group(1).rsplit(".", 1)[-1]
            message = (match.group(2) or "").strip() or exc_class
            break
    else:
        exited = re.search(r"asv: benchmark failed \(exit status (-?\d+)\)", text)
        if exited:
            message = f"benchmark process exited with status {exited.group(1)}"
    status = "oom" if exc_class == "OutOfMemoryError" else "error"
    return {
        "check": "asv_run",
        "status": status,
        "exception_class": exc_class,
        "message": message[:4000],
        "traceback_head": _head(text),
    }


def _head(text: str, lines: int = 20) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])[:8000]


def complete_records(cases_dir: Path, case_results: list[CaseResult], log: str) -> dict[str, int]:
    """Give every case asv failed a record that says why; returns counts of what was added."""
    cases_dir.mkdir(parents=True, exist_ok=True)
    segments = split_by_case(log)
    added = {"missing": 0, "amended": 0}
    for result in case_results:
        if not result.failed:
            continue
        path = cases_dir / f"{result.case_id}.json"
        text = segments.get(result.case_id, "")
        check = (
            failure_check(text)
            if text
            else {
                "check": "asv_run",
                "status": "error",
                "exception_class": "BenchmarkFailed",
                "message": "asv stored no result and the case printed nothing (crash before setup?)",
            }
        )
        if not path.exists():
            record = {
                "schema": CASE_SCHEMA,
                "case": result.case,
                "params": result.params,
                "labels": {},
                "verdict": check,
                "extra_checks": [],
                "metrics": {},
                "gpu_state": {},
                "recorded_at": utc(datetime.now(UTC)),
            }
            added["missing"] += 1
        else:
            record = json.loads(path.read_text())
            if SEVERITY[record["verdict"]["status"]] >= SEVERITY["timeout"]:
                continue  # the case already said why it failed (error, oom or timeout)
            record["extra_checks"].append(record["verdict"])
            record["verdict"] = check
            added["amended"] += 1
        path.write_text(json.dumps(record, indent=1, sort_keys=True))
    return added


def read_run_json(sidecar: Path) -> dict[str, Any]:
    path = sidecar / "run.json"
    return json.loads(path.read_text()) if path.is_file() else {}


def merge_runs(earlier: dict[str, Any], later: dict[str, Any]) -> dict[str, Any]:
    """run.json of a run continued with another `--bench` chunk under the same commit: the later run's
    facts, the earlier start, both chunks' filters and the sum of their wall times."""
    merged = {k: v for k, v in later.items() if k != "schema"}
    filters = [earlier.get("bench_filter"), later.get("bench_filter")]
    merged["bench_filter"] = None if None in filters else f"{filters[0]}|{filters[1]}"
    merged["started_at"] = earlier.get("started_at") or later.get("started_at")
    merged["gpu_state_before"] = earlier.get("gpu_state_before") or later.get("gpu_state_before")
    merged["wall_seconds"] = round(float(earlier.get("wall_seconds") or 0) + float(later["wall_seconds"]), 3)
    merged["asv_exit_code"] = max(int(earlier.get("asv_exit_code") or 0), int(later["asv_exit_code"]))
    return merged


def write_run_json(sidecar: Path, run: dict[str, Any]) -> Path:
    path = sidecar / "run.json"
    path.write_text(json.dumps({"schema": RUN_SCHEMA, **run}, indent=1, sort_keys=True, default=str))
    return path

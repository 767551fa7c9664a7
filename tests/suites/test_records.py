"""Correctness records: ids, verdicts, exceptions, atomic writes (docs/records.md)."""

import hashlib
import json
from pathlib import Path

import pytest

from benchmarks.harness import records


def test_case_id_is_module_class_and_sha1_of_canonical_params() -> None:
    params = {"rank": 3, "recipe": "nvfp4", "mode": "default"}
    canonical = '{"mode":"default","rank":3,"recipe":"nvfp4"}'
    expected = "linear.LinearFwdBwd-" + hashlib.sha1(canonical.encode()).hexdigest()[:12]
    assert records.case_id("linear.LinearFwdBwd", params) == expected
    assert records.case_id("linear.LinearFwdBwd", dict(reversed(params.items()))) == expected


def test_compare_passes_at_the_tolerance_and_fails_above_or_on_nan() -> None:
    assert records.compare("c", "rel_l2", 0.1, 0.1).status == "pass"
    assert records.compare("c", "rel_l2", 0.11, 0.1).status == "fail_accuracy"
    nan = records.compare("c", "rel_l2", float("nan"), 0.1)
    assert nan.status == "fail_accuracy"
    assert "value" not in nan.to_json() and "nan" in nan.to_json()["message"]


def test_verdict_is_the_most_severe_check_and_the_rest_are_extra() -> None:
    rec = records.CaseRecord(case="gemm.Gemm", params={"recipe": "bf16"}, labels={"backend": "te"})
    rec.add(records.compare("vs_fp32", "rel_l2", 0.001, 0.01))
    rec.add(records.compare("parity", "max_abs_diff", 2.0, 0.0))
    out = rec.to_json()
    assert out["verdict"]["check"] == "parity" and out["verdict"]["status"] == "fail_accuracy"
    assert [c["check"] for c in out["extra_checks"]] == ["vs_fp32"]
    assert out["schema"] == "tewatch.case/1"


def test_exceptions_keep_class_message_and_traceback_head() -> None:
    def recurse(n: int) -> int:
        return recurse(n + 1)

    try:
        recurse(0)
    except RecursionError as exc:
        check = records.from_exception("cpu_round_trip", exc)
    assert check.status == "error" and check.exception_class == "RecursionError"
    assert "maximum recursion depth" in check.message
    assert check.traceback_head.startswith("Traceback") and len(check.traceback_head) <= 8000


def test_out_of_memory_by_class_name_is_oom() -> None:
    class OutOfMemoryError(RuntimeError):
        pass

    assert records.from_exception("run", OutOfMemoryError("CUDA out of memory")).status == "oom"


def test_unknown_status_is_refused() -> None:
    with pytest.raises(ValueError):
        records.Check(check="x", status="flaky")


def test_a_record_without_a_check_is_refused() -> None:
    with pytest.raises(ValueError, match="no check"):
        records.CaseRecord(case="a.B", params={}, labels={}).verdict()


def test_write_is_atomic_and_valid_json(tmp_path: Path) -> None:
    rec = records.CaseRecord(
        case="rht.Rht", params={"backend": "torch-ref", "shape": "128x256"}, labels={"backend": "torch-ref"}
    )
    rec.add(records.Check(check="capability", status="unsupported", reason="needs sm_100"))
    rec.metric("tflops", 1.5, "TFLOP/s")
    path = records.write_record(rec, tmp_path)
    assert path == tmp_path / "cases" / f"{rec.case_id}.json"
    data = json.loads(path.read_text())
    assert data["verdict"] == {"check": "capability", "status": "unsupported", "reason": "needs sm_100"}
    assert data["metrics"] == {"tflops": {"value": 1.5, "unit": "TFLOP/s"}}
    assert [p.name for p in (tmp_path / "cases").iterdir()] == [path.name]


def test_no_record_folder_means_nothing_written(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(records.RECORD_DIR_ENV, raising=False)
    rec = records.CaseRecord(case="a.B", params={}, labels={})
    rec.add(records.Check(check="x", status="pass"))
    assert records.write_record(rec) is None

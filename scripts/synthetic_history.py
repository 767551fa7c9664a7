"""Fill a store with a long, realistic-looking history, for scale benchmarks of the store and the pages.

The shape follows the suites: quantize, RHT, GEMM and Linear (recipe x rank x torch.compile mode) cases on
three GPU models, one run per GPU per commit on `main`, a few pull-request runs, version upgrades midway
(environment shifts), step changes in some series, and the correctness failures the H200 shows
(3D/4D shape contracts, the CPU round trip). Rows go in through SQLAlchemy Core in large batches.

    python scripts/synthetic_history.py sqlite:///big.sqlite3 --results 1000000
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import random
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Engine, insert, select

from tewatch.ingest.latest import update_latest_verdicts
from tewatch.store.database import make_engine
from tewatch.store.migrate import upgrade_engine
from tewatch.store.models import (
    Benchmark,
    Case,
    Commit,
    Environment,
    Machine,
    Result,
    Run,
    Series,
    Verdict,
)

GPUS = [("NVIDIA H200", "9.0"), ("NVIDIA B200", "10.0"), ("NVIDIA GB200", "10.0")]
LINEAR_RECIPES = {
    "bf16": "te",
    "fp8-current": "te",
    "fp8-block": "te",
    "mxfp8": "te",
    "nvfp4": "te",
    "nvfp4-ref": "te-ref",
}
CONTRACT_QUANTIZERS = ["nvfp4", "nvfp4-rht", "nvfp4-2d", "fp8-current", "fp8-block", "mxfp8"]
ROUND_TRIP_QUANTIZERS = ["nvfp4", "mxfp8", "fp8-current", "fp8-block", "torch-ref"]
MODES = ["eager", "default", "reduce-overhead", "max-autotune"]
RANKS = [2, 3, 4]
QUANTIZE_RECIPES = ["nvfp4", "fp8-current", "fp8-block"]
SHAPES = ["4096x4096", "8192x8192", "16384x5120"]
GEMM_SHAPES = ["4096x4096x4096", "8192x8192x5120", "16384x8192x8192"]
BATCH = 20_000


def _digest(*parts: object) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


@dataclass
class CaseSpec:
    case_name: str
    params: dict
    labels: dict
    benchmarks: list[tuple[str, str]]  # (method, unit)
    base_seconds: float


@dataclass
class Plan:
    cases: list[CaseSpec] = field(default_factory=list)

    @property
    def series_per_gpu(self) -> int:
        return sum(len(c.benchmarks) for c in self.cases)


def case_specs() -> list[CaseSpec]:
    specs: list[CaseSpec] = []
    for recipe in QUANTIZE_RECIPES:
        for shape in SHAPES:
            for rht in (False, True):
                for backend in ("te", "torch-ref"):
                    rows, cols = (int(x) for x in shape.split("x"))
                    specs.append(
                        CaseSpec(
                            "quantize.Quantize",
                            {"recipe": recipe, "shape": shape, "rht": rht, "backend": backend},
                            {"backend": backend, "recipe": recipe, "op": "quantize"},
                            [("track_seconds", "seconds")],
                            rows * cols * 2 / 2.5e12 * (40 if backend == "torch-ref" else 1),
                        )
                    )
    for shape in SHAPES:
        specs.append(
            CaseSpec(
                "rht.Rht",
                {"shape": shape},
                {"backend": "te", "op": "rht"},
                [("track_seconds", "seconds")],
                math.prod(int(x) for x in shape.split("x")) * 4 / 3.5e12,
            )
        )
    for recipe in ("bf16", "fp8-current", "nvfp4"):
        for shape in GEMM_SHAPES:
            m, n, k = (int(x) for x in shape.split("x"))
            specs.append(
                CaseSpec(
                    "gemm.Gemm",
                    {"recipe": recipe, "shape": shape},
                    {"backend": "te", "recipe": recipe, "op": "gemm"},
                    [("track_seconds", "seconds"), ("tflops", "TFLOP/s"), ("share_of_ceiling", "fraction")],
                    2 * m * n * k / 7e14,
                )
            )
    for recipe, backend in LINEAR_RECIPES.items():
        for rank in RANKS:
            for mode in MODES:
                benchmarks = [("track_seconds", "seconds")]
                if mode != "eager":
                    benchmarks.append(("compile_seconds", "seconds"))
                specs.append(
                    CaseSpec(
                        "linear.LinearFwdBwd",
                        {"recipe": recipe, "rank": rank, "mode": mode},
                        {"backend": backend, "recipe": recipe, "rank": rank, "mode": mode, "op": "linear"},
                        benchmarks,
                        0.0015 * (0.8 if mode == "max-autotune" else 1.0) * (6 if backend == "te-ref" else 1),
                    )
                )
    for quantizer in CONTRACT_QUANTIZERS:
        recipe = "nvfp4" if quantizer.startswith("nvfp4") else quantizer
        for rank in RANKS:
            specs.append(
                CaseSpec(
                    "contracts.ShapeContract",
                    {"quantizer": quantizer, "rank": rank},
                    {
                        "backend": "te",
                        "recipe": recipe,
                        "variant": quantizer,
                        "rank": rank,
                        "op": "shape_contract",
                    },
                    [("track_seconds", "seconds")],
                    2e-5,
                )
            )
    for quantizer in ROUND_TRIP_QUANTIZERS:
        backend = "torch-ref" if quantizer == "torch-ref" else "te"
        recipe = "nvfp4" if quantizer == "torch-ref" else quantizer
        specs.append(
            CaseSpec(
                "contracts.CpuRoundTrip",
                {"quantizer": quantizer},
                {"backend": backend, "recipe": recipe, "variant": quantizer, "op": "cpu_round_trip"},
                [("track_seconds", "seconds")],
                4e-4,
            )
        )
    return specs


def verdict_for(spec: CaseSpec, gpu: str, cc: str) -> dict:
    """The correctness record a case gets on a GPU: what TE 2.20.2 really does, in short."""
    recipe = spec.labels.get("recipe")
    backend = spec.labels.get("backend", "te")
    op = spec.labels.get("op")
    blackwell = cc.startswith("10")
    if op == "shape_contract" and recipe == "nvfp4" and spec.params["rank"] > 2:
        return {
            "status": "error",
            "check": "shape_contract",
            "exception_class": "ShapeContractMismatch",
            "message": "NVFP4Quantizer for logical shape (2, 1024, 1024): columnwise_data: predicted "
            "(1024, 2, 512), allocated (1024, 1024)",
            "traceback_head": 'Traceback (most recent call last):\n  File "benchmarks/contracts.py", line 93',
        }
    if op == "cpu_round_trip" and recipe == "nvfp4" and backend == "te":
        return {
            "status": "error",
            "check": "cpu_round_trip",
            "exception_class": "RecursionError",
            "message": "maximum recursion depth exceeded while calling a Python object",
            "traceback_head": 'Traceback (most recent call last):\n  File "quantized_tensor.py"',
        }
    if op in ("shape_contract", "cpu_round_trip"):
        return {
            "status": "pass",
            "check": op,
            "metric": "max_abs_diff",
            "metric_value": 0.0,
            "tolerance": 0.0,
        }
    if backend == "te" and recipe in ("nvfp4", "mxfp8") and not blackwell:
        what = "NVFP4" if recipe == "nvfp4" else "MXFP8"
        return {
            "status": "unsupported",
            "check": "capability",
            "reason": f"Device compute capability 10.0 or higher required for {what} execution.",
        }
    compiled = spec.params.get("mode") not in (None, "eager")
    if op == "linear" and recipe == "nvfp4" and compiled and spec.params["rank"] == 3:
        return {
            "status": "error",
            "check": "compiled_vs_eager",
            "exception_class": "AssertionError",
            "message": "columnwise shape [5120, 1, 4096] != kernel layout [5120, 4096]",
            "traceback_head": 'Traceback (most recent call last):\n  File "linear.py", line 88',
        }
    if op == "linear" and backend == "te-ref" and spec.params.get("rank") == 4:
        return {
            "status": "error",
            "check": "compiled_vs_eager",
            "exception_class": "RuntimeError",
            "message": "shape '[2, 2, 1024]' is invalid for input of size 2097152",
            "traceback_head": 'Traceback (most recent call last):\n  File "ref.py", line 301',
        }
    return {
        "status": "pass",
        "check": "native_vs_reference",
        "metric": "max_abs_err",
        "metric_value": 0.0,
        "tolerance": 0.0,
    }


def _insert(engine: Engine, table, rows: list[dict]) -> None:
    if rows:
        with engine.begin() as conn:
            conn.execute(insert(table), rows)


def generate(engine: Engine, results: int, seed: int = 7, progress: bool = True) -> dict[str, int]:
    """Write about `results` results (plus their runs, verdicts and everything they point to)."""
    rng = random.Random(seed)
    upgrade_engine(engine)
    specs = case_specs()
    plan = Plan(specs)
    commits_needed = max(2, math.ceil(results / (plan.series_per_gpu * len(GPUS))))
    start = datetime(2026, 1, 1, tzinfo=UTC)

    benchmark_ids: dict[str, int] = {}
    bench_rows = []
    for spec in specs:
        for method, unit in spec.benchmarks:
            name = f"{spec.case_name}.{method}"
            if name not in benchmark_ids:
                benchmark_ids[name] = -1
                bench_rows.append(
                    {
                        "name": name,
                        "case_name": spec.case_name,
                        "param_names": sorted(spec.params),
                        "unit": unit,
                        "type": "track",
                        "version": _digest(name)[:16],
                        "higher_is_better": unit in ("TFLOP/s", "fraction"),
                    }
                )
    _insert(engine, Benchmark, bench_rows)
    with engine.connect() as conn:
        benchmark_ids = dict(conn.execute(select(Benchmark.name, Benchmark.id)).all())

    machine_rows, env_rows = [], []
    for gpu, cc in GPUS:
        for driver in ("570.86.15", "580.159.04"):
            machine_rows.append(
                {
                    "digest": _digest(gpu, driver),
                    "name": gpu.lower().replace(" ", "-") + "-01",
                    "gpu_model": gpu,
                    "compute_capability": cc,
                    "gpu_count": 8,
                    "gpu_memory_mb": 143771,
                    "driver": driver,
                    "cuda": "12.9" if driver.startswith("570") else "13.0",
                    "cpu": "Intel Xeon Platinum 8480C",
                    "arch": "x86_64",
                    "os": "Linux 6.8",
                    "ram": "2 TB",
                    "extra": {},
                }
            )
    for torch_v, te_v in (("2.10.0+cu129", "2.19.0"), ("2.11.0+cu130", "2.20.2"), ("2.11.0+cu130", "2.21.0")):
        env_rows.append(
            {
                "digest": _digest(torch_v, te_v),
                "python": "3.12.3",
                "torch": torch_v,
                "te_version": te_v,
                "te_commit": _digest(te_v)[:40],
                "extra": {},
            }
        )
    _insert(engine, Machine, machine_rows)
    _insert(engine, Environment, env_rows)
    with engine.connect() as conn:
        machine_ids = {(m.gpu_model, m.driver): m.id for m in conn.execute(select(Machine)).all()}
        env_ids = [e.id for e in conn.execute(select(Environment).order_by(Environment.id)).all()]

    case_rows, series_keys = [], []
    for gpu, cc in GPUS:
        for spec in specs:
            fp = _digest(spec.case_name, spec.params, gpu, cc)
            case_rows.append(
                {
                    "fingerprint": fp,
                    "case_name": spec.case_name,
                    "params": spec.params,
                    "gpu_model": gpu,
                    "compute_capability": cc,
                    "backend": spec.labels.get("backend"),
                    "recipe": spec.labels.get("recipe"),
                    "mode": spec.labels.get("mode"),
                    "rank": spec.labels.get("rank"),
                    "world_size": None,
                    "labels": spec.labels,
                }
            )
    _insert(engine, Case, case_rows)
    with engine.connect() as conn:
        case_ids = dict(conn.execute(select(Case.fingerprint, Case.id)).all())
    series_rows = []
    for gpu, cc in GPUS:
        for spec in specs:
            case_fp = _digest(spec.case_name, spec.params, gpu, cc)
            for method, _unit in spec.benchmarks:
                series_rows.append(
                    {
                        "fingerprint": _digest(case_fp, method),
                        "case_id": case_ids[case_fp],
                        "benchmark_id": benchmark_ids[f"{spec.case_name}.{method}"],
                    }
                )
                series_keys.append((gpu, cc, spec, method))
    _insert(engine, Series, series_rows)
    with engine.connect() as conn:
        series_ids = dict(conn.execute(select(Series.fingerprint, Series.id)).all())

    commit_rows = []
    for i in range(commits_needed):
        commit_rows.append(
            {
                "repo": "NVIDIA/TransformerEngine",
                "sha": _digest("commit", i)[:40],
                "parents": [],
                "branch": "main",
                "committed_at": start + timedelta(hours=6 * i),
                "pr_number": None,
                "merge_base_sha": None,
            }
        )
    _insert(engine, Commit, commit_rows)
    with engine.connect() as conn:
        commits = conn.execute(select(Commit.id, Commit.sha, Commit.committed_at).order_by(Commit.id)).all()

    steps = {
        fp: (rng.randrange(commits_needed), rng.choice([0.85, 1.12, 1.3])) for fp in list(series_ids)[::17]
    }
    written = {"results": 0, "verdicts": 0, "runs": 0}
    t0 = time.perf_counter()
    run_rows: list[dict] = []
    for ci, commit in enumerate(commits):
        for gpu, _cc in GPUS:
            driver = "570.86.15" if ci < commits_needed // 2 else "580.159.04"
            env_id = env_ids[min(len(env_ids) - 1, ci * len(env_ids) // commits_needed)]
            run_rows.append(
                {
                    "digest": _digest("run", ci, gpu),
                    "machine_id": machine_ids[(gpu, driver)],
                    "environment_id": env_id,
                    "commit_id": commit.id,
                    "branch": "main",
                    "pr_number": None,
                    "asv_env_name": "existing-py_usr_bin_python3",
                    "profile": "full",
                    "started_at": commit.committed_at + timedelta(minutes=30),
                    "finished_at": commit.committed_at + timedelta(minutes=44),
                    "uploaded_at": commit.committed_at + timedelta(minutes=45),
                    "gpu_state": {
                        "sm_clock_mhz": [1980],
                        "temperature_c": [41 + ci % 7],
                        "throttle_reasons": ["none"],
                    },
                    "gpu": gpu,
                }
            )
    summary: dict[str, dict[str, Any]] = {"verdicts": {}, "results": {}}
    for gpu, cc in GPUS:
        counts: dict[str, int] = {}
        for spec in specs:
            status = verdict_for(spec, gpu, cc)["status"]
            counts[status] = counts.get(status, 0) + 1
        summary["verdicts"][gpu] = counts
    for row in run_rows:
        row["summary"] = {"verdicts": summary["verdicts"][row.pop("gpu")]}
    for chunk in _chunks(run_rows, BATCH):
        _insert(engine, Run, chunk)
    with engine.connect() as conn:
        runs = conn.execute(
            select(Run.id, Run.digest, Run.commit_id, Machine.gpu_model).join(Machine).order_by(Run.id)
        ).all()
    written["runs"] = len(runs)
    commit_index = {c.id: i for i, c in enumerate(commits)}

    result_buf: list[dict] = []
    verdict_buf: list[dict] = []
    for run in runs:
        ci = commit_index[run.commit_id]
        cc = dict(GPUS)[run.gpu_model]
        for spec in specs:
            case_fp = _digest(spec.case_name, spec.params, run.gpu_model, cc)
            verdict = verdict_for(spec, run.gpu_model, cc)
            verdict_buf.append(
                {
                    "run_id": run.id,
                    "case_id": case_ids[case_fp],
                    "status": verdict["status"],
                    "check": verdict.get("check", ""),
                    "metric": verdict.get("metric"),
                    "metric_value": verdict.get("metric_value"),
                    "tolerance": verdict.get("tolerance"),
                    "exception_class": verdict.get("exception_class"),
                    "message": verdict.get("message"),
                    "traceback_head": verdict.get("traceback_head"),
                    "reason": verdict.get("reason"),
                    "extra_checks": [],
                    "gpu_state": {"sm_clock_mhz": [1980, 1975], "power_w": [412.0]},
                }
            )
            for method, unit in spec.benchmarks:
                fp = _digest(case_fp, method)
                ok = verdict["status"] in ("pass", "fail_accuracy")
                base = spec.base_seconds * (30 if method == "compile_seconds" else 1)
                at, factor = steps.get(fp, (commits_needed + 1, 1.0))
                level = base * (factor if ci >= at else 1.0)
                samples = [level * (1 + rng.gauss(0, 0.02)) for _ in range(8)]
                if unit == "TFLOP/s":
                    samples = [1e-12 / s for s in samples]
                elif unit == "fraction":
                    samples = [min(1.0, 0.7 * spec.base_seconds / s) for s in samples]
                samples.sort()
                result_buf.append(
                    {
                        "run_id": run.id,
                        "series_id": series_ids[fp],
                        "status": "ok"
                        if ok
                        else ("unsupported" if verdict["status"] == "unsupported" else "failed"),
                        "value": samples[4] if ok else None,
                        "samples": samples if ok else None,
                        "q_25": samples[2] if ok else None,
                        "q_75": samples[5] if ok else None,
                        "number": 100,
                        "repeat": 8,
                        "benchmark_version": "",
                    }
                )
                if len(result_buf) >= BATCH:
                    _insert(engine, Verdict, verdict_buf)
                    _insert(engine, Result, result_buf)
                    written["results"] += len(result_buf)
                    written["verdicts"] += len(verdict_buf)
                    result_buf, verdict_buf = [], []
                    if progress:
                        rate = written["results"] / (time.perf_counter() - t0)
                        print(f"\r{written['results']:>9,} results  {rate:,.0f}/s", end="", flush=True)
    _insert(engine, Verdict, verdict_buf)
    _insert(engine, Result, result_buf)
    written["results"] += len(result_buf)
    written["verdicts"] += len(verdict_buf)
    with engine.begin() as conn:  # the latest-verdict tables, as ingest leaves them after each upload
        for run in runs:
            update_latest_verdicts(conn, run.id, "main")
    if progress:
        print()
    return written


def _chunks(rows: list[dict], size: int) -> Iterator[list[dict]]:
    for i in range(0, len(rows), size):
        yield rows[i : i + size]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("database_url")
    parser.add_argument("--results", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    engine = make_engine(args.database_url)
    t0 = time.perf_counter()
    written = generate(engine, args.results, args.seed)
    print(f"wrote {written} in {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()

"""Fill a store with a long, realistic-looking history, for scale benchmarks of the store and the pages.

The shape follows the suites: quantize, RHT, GEMM and Linear (recipe x rank x torch.compile mode) cases on
three GPU models, one run per GPU per commit on `main`, a few pull-request runs, version upgrades midway
(environment shifts), step changes in some series, and the correctness failures the H200 shows
(3D/4D shape contracts, the CPU round trip). Pull requests 1 to 3 each have a head commit run on every
GPU against a merge base near the end of main; pull request 1 breaks the FP8 GEMMs and slows the linear
cases by 10 %.

Rows are not ingested: they are bulk-written (executemany on SQLite, binary COPY on PostgreSQL, through
tewatch.store.writes.bulk) with the (series, run) and (case, run) indexes dropped during the load and built once
afterwards, then the latest-verdict tables are rebuilt from the whole history (what ingest leaves after
each upload) and, on PostgreSQL, the tables vacuumed and analysed. Samples are drawn from a pool of noise
vectors. About 50,000 results a second on SQLite here.

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

from sqlalchemy import Engine, Index, insert, select

from tewatch.ingest.latest import rebuild_latest_verdicts
from tewatch.store.engine.database import make_engine
from tewatch.store.engine.migrate import upgrade_engine
from tewatch.store.schema.models import (
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
from tewatch.store.writes.bulk import insert_rows

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
BATCH = 50_000
REPO = "NVIDIA/TransformerEngine"
PULL_REQUESTS = 3  # pull requests 1..3, one head commit each, run on every GPU
# one object for every verdict row, so the bulk insert serialises it once per batch
NO_CHECKS: list = []
VERDICT_GPU_STATE = {"sm_clock_mhz": [1980, 1975], "power_w": [412.0]}
DEFERRED_INDEXES = ("ix_results_series_points", "ix_verdicts_case_points")
RESULT_COLUMNS = ("run_id", "series_id", "status", "value", "samples", "q_25", "q_75", "number", "repeat",
                  "benchmark_version")  # fmt: skip
VERDICT_COLUMNS = ("run_id", "case_id", "status", "check", "metric", "metric_value", "tolerance",
                   "exception_class", "message", "traceback_head", "reason", "extra_checks", "gpu_state")  # fmt: skip


def _machine_name(gpu: str) -> str:
    """Each GPU model's one machine (its drivers change over the history)."""
    return gpu.lower().replace(" ", "-") + "-01"


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
                    "name": _machine_name(gpu),
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

    case_rows = []
    for gpu, cc in GPUS:
        for spec in specs:
            fp = _digest(spec.case_name, spec.params, gpu, cc)
            case_rows.append(
                {
                    "fingerprint": fp,
                    "group_key": fp,
                    "machine": _machine_name(gpu),
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
    _insert(engine, Series, series_rows)
    with engine.connect() as conn:
        series_ids = dict(conn.execute(select(Series.fingerprint, Series.id)).all())

    commit_rows = [
        {
            "repo": REPO,
            "sha": _digest("commit", i)[:40],
            "parents": [_digest("commit", i - 1)[:40]] if i else [],
            "branch": "main",
            "committed_at": start + timedelta(hours=6 * i),
            "pr_number": None,
            "merge_base_sha": None,
        }
        for i in range(commits_needed)
    ]
    commit_rows += [pull_request_commit(pr, commits_needed, start) for pr in range(1, PULL_REQUESTS + 1)]
    _insert(engine, Commit, commit_rows)
    with engine.connect() as conn:
        commits = conn.execute(select(Commit.id, Commit.pr_number).order_by(Commit.id)).all()

    steps = {
        fp: (rng.randrange(commits_needed), rng.choice([0.85, 1.12, 1.3])) for fp in list(series_ids)[::17]
    }
    run_plans = []  # (commit index on main, gpu, pull request or None), in run id order
    for ci, commit in enumerate(commits):
        level_at = ci if commit.pr_number is None else pull_request_base(commit.pr_number, commits_needed)
        run_plans += [(level_at, gpu, commit.pr_number) for gpu, _cc in GPUS]
    run_rows = [
        run_row(i, level_at, gpu, pr, commits[i // len(GPUS)].id, commit_rows[i // len(GPUS)], commits_needed)
        for i, (level_at, gpu, pr) in enumerate(run_plans)
    ]
    for row, (_, gpu, pr) in zip(run_rows, run_plans, strict=True):
        row["machine_id"] = machine_ids[(gpu, row.pop("driver"))]
        row["environment_id"] = env_ids[
            min(len(env_ids) - 1, row.pop("env_index") * len(env_ids) // commits_needed)
        ]
        row["summary"] = {"verdicts": verdict_counts(specs, gpu, pr)}
    for chunk in _chunks(run_rows, BATCH):
        _insert(engine, Run, chunk)
    with engine.connect() as conn:
        run_ids = list(conn.scalars(select(Run.id).order_by(Run.id)))

    layout = {gpu: gpu_layout(specs, gpu, cc, case_ids, series_ids, steps) for gpu, cc in GPUS}
    noise = noise_pool(rng)
    written = {"results": 0, "verdicts": 0, "runs": len(run_ids)}
    t0 = time.perf_counter()
    with engine.begin() as conn:
        deferred = drop_history_indexes(conn)
    result_buf: list[tuple] = []
    verdict_buf: list[tuple] = []
    for run_id, (level_at, gpu, pr) in zip(run_ids, run_plans, strict=True):
        verdict_buf += [(run_id, *row) for row in layout[gpu].verdicts(pr)]
        result_buf += layout[gpu].results(run_id, level_at, pr, rng, noise)
        if len(result_buf) >= BATCH:
            _write_rows(engine, result_buf, verdict_buf, written)
            result_buf, verdict_buf = [], []
            if progress:
                rate = written["results"] / (time.perf_counter() - t0)
                print(f"\r{written['results']:>11,} results  {rate:,.0f}/s", end="", flush=True)
    _write_rows(engine, result_buf, verdict_buf, written)
    if progress:
        print(f"\nindexing and the latest-verdict tables ({time.perf_counter() - t0:.0f} s so far) …")
    with engine.begin() as conn:
        for index in deferred:
            index.create(conn)
        rebuild_latest_verdicts(conn)  # what ingest leaves after each upload, for the whole history at once
    if engine.dialect.name == "postgresql":
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            # what autovacuum does soon after a load this size, while the pages are timed: the statistics,
            # and the visibility map the index-only scans of the history indexes need
            conn.exec_driver_sql("VACUUM ANALYZE")
    return written


def pull_request_base(pr: int, commits_needed: int) -> int:
    """The main commit a pull request branches from: near the end of the history."""
    return max(0, commits_needed - 1 - 4 * pr)


def pull_request_commit(pr: int, commits_needed: int, start: datetime) -> dict:
    base_index = pull_request_base(pr, commits_needed)
    base = _digest("commit", base_index)[:40]
    return {
        "repo": REPO,
        "sha": _digest("pr", pr)[:40],
        "parents": [base],
        "branch": f"pr-{pr}",
        "committed_at": start + timedelta(hours=6 * base_index, minutes=90),
        "pr_number": pr,
        "merge_base_sha": base,
    }


def run_row(
    index: int, level_at: int, gpu: str, pr: int | None, commit_id: int, commit: dict, commits_needed: int
) -> dict:
    started = commit["committed_at"] + timedelta(minutes=30)
    return {
        "digest": _digest("run", index, gpu),
        "driver": "570.86.15" if level_at < commits_needed // 2 else "580.159.04",
        "env_index": level_at,
        "commit_id": commit_id,
        "branch": commit["branch"],
        "pr_number": pr,
        "merge_base_sha": commit["merge_base_sha"],
        "asv_env_name": "existing-py_usr_bin_python3",
        "profile": "full",
        "started_at": started,
        "finished_at": started + timedelta(minutes=14),
        "uploaded_at": started + timedelta(minutes=15),
        "gpu_state": {
            "sm_clock_mhz": [1980],
            "temperature_c": [41 + index % 7],
            "throttle_reasons": ["none"],
        },
    }


def breaks_in_pull_request(spec: CaseSpec, pr: int | None) -> bool:
    """Pull request 1 breaks the FP8 GEMMs (a new failure on its page) and slows the linear cases."""
    return pr == 1 and spec.case_name == "gemm.Gemm" and spec.params.get("recipe") == "fp8-current"


def pull_request_verdict(spec: CaseSpec, gpu: str, cc: str, pr: int | None) -> dict:
    if breaks_in_pull_request(spec, pr):
        return {
            "status": "error",
            "check": "native_vs_reference",
            "exception_class": "RuntimeError",
            "message": "cublasLt returned CUBLAS_STATUS_NOT_SUPPORTED for the FP8 GEMM",
            "traceback_head": 'Traceback (most recent call last):\n  File "benchmarks/gemm.py", line 61',
        }
    return verdict_for(spec, gpu, cc)


def verdict_counts(specs: list[CaseSpec], gpu: str, pr: int | None) -> dict[str, int]:
    cc = dict(GPUS)[gpu]
    counts: dict[str, int] = {}
    for spec in specs:
        status = pull_request_verdict(spec, gpu, cc, pr)["status"]
        counts[status] = counts.get(status, 0) + 1
    return counts


def noise_pool(rng: random.Random, size: int = 4096) -> list[list[float]]:
    """Sorted relative spreads of 8 samples (2 % noise), drawn once and picked at random per result."""
    return [sorted(1 + rng.gauss(0, 0.02) for _ in range(8)) for _ in range(size)]


@dataclass
class SeriesShape:
    series_id: int
    unit: str
    base: float
    step_at: int
    step: float
    slower_in_pr: bool


@dataclass
class GpuLayout:
    """Every case and series of one GPU: the verdict rows (less the run id) and how results are drawn."""

    verdict_rows: dict[int | None, list[tuple]]
    series_by_pr: dict[int | None, list[tuple[SeriesShape, bool, str]]]

    def verdicts(self, pr: int | None) -> list[tuple]:
        return self.verdict_rows[pr if pr in self.verdict_rows else None]

    def results(
        self, run_id: int, level_at: int, pr: int | None, rng: random.Random, noise: list[list[float]]
    ) -> list[tuple]:
        rows: list[tuple] = []
        pick = rng.getrandbits
        bits = (len(noise) - 1).bit_length()
        for shape, ok, status in self.series_by_pr[pr if pr in self.series_by_pr else None]:
            if not ok:
                rows.append((run_id, shape.series_id, status, None, None, None, None, 100, 8, ""))
                continue
            level = shape.base * (shape.step if level_at >= shape.step_at else 1.0)
            if pr == 1 and shape.slower_in_pr:
                level *= 1.1
            spread = noise[pick(bits)]
            if shape.unit == "TFLOP/s":
                samples = sorted(1e-12 / (level * f) for f in spread)
            elif shape.unit == "fraction":
                samples = sorted(min(1.0, 0.7 * shape.base / (level * f)) for f in spread)
            else:
                samples = [level * f for f in spread]
            rows.append(
                (run_id, shape.series_id, status, samples[4], samples, samples[2], samples[5], 100, 8, "")
            )
        return rows


def gpu_layout(
    specs: list[CaseSpec],
    gpu: str,
    cc: str,
    case_ids: dict[str, int],
    series_ids: dict[str, int],
    steps: dict[str, tuple[int, float]],
) -> GpuLayout:
    verdict_rows: dict[int | None, list[tuple]] = {}
    series_by_pr: dict[int | None, list[tuple[SeriesShape, bool, str]]] = {}
    for pr in (None, 1):
        verdict_rows[pr], series_by_pr[pr] = [], []
        for spec in specs:
            case_fp = _digest(spec.case_name, spec.params, gpu, cc)
            verdict = pull_request_verdict(spec, gpu, cc, pr)
            verdict_rows[pr].append(
                (
                    case_ids[case_fp],
                    verdict["status"],
                    verdict.get("check", ""),
                    verdict.get("metric"),
                    verdict.get("metric_value"),
                    verdict.get("tolerance"),
                    verdict.get("exception_class"),
                    verdict.get("message"),
                    verdict.get("traceback_head"),
                    verdict.get("reason"),
                    NO_CHECKS,
                    VERDICT_GPU_STATE,
                )
            )
            ok = verdict["status"] in ("pass", "fail_accuracy")
            status = "ok" if ok else ("unsupported" if verdict["status"] == "unsupported" else "failed")
            for method, unit in spec.benchmarks:
                fp = _digest(case_fp, method)
                step_at, step = steps.get(fp, (1 << 62, 1.0))
                base = spec.base_seconds * (30 if method == "compile_seconds" else 1)
                shape = SeriesShape(
                    series_ids[fp], unit, base, step_at, step, spec.case_name.startswith("linear")
                )
                series_by_pr[pr].append((shape, ok, status))
    return GpuLayout(verdict_rows, series_by_pr)


def drop_history_indexes(conn) -> list[Index]:
    """Drop the (series, run) and (case, run) indexes for the load: built once afterwards, they cost a
    fraction of keeping them through millions of inserts."""
    dropped = []
    for table in (Result.__table__, Verdict.__table__):
        for index in table.indexes:
            if index.name in DEFERRED_INDEXES:
                index.drop(conn)
                dropped.append(index)
    return dropped


def _write_rows(engine: Engine, results: list[tuple], verdicts: list[tuple], written: dict[str, int]) -> None:
    with engine.begin() as conn:
        written["verdicts"] += insert_rows(conn, Verdict.__table__, VERDICT_COLUMNS, verdicts)
        written["results"] += insert_rows(conn, Result.__table__, RESULT_COLUMNS, results)


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

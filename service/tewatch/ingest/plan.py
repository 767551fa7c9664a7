"""Turn the parsed files of one upload into what the store writes: a RunPlan (pure, no database)."""

from __future__ import annotations

import functools
import math
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NamedTuple

from tewatch.core import stderr_log_file
from tewatch.core.clock import as_utc, from_epoch_seconds, future_commit_message, too_far_ahead
from tewatch.core.units import HIGHER_IS_BETTER_UNITS
from tewatch.ingest.asv_files import (
    AsvResults,
    BenchmarkInfo,
    BenchmarkResult,
    decode_param,
    parse_benchmarks,
    parse_machine,
    parse_results,
)
from tewatch.ingest.bounds import UNBOUNDED, UploadBounds
from tewatch.ingest.bundle import UploadBundle
from tewatch.ingest.errors import IngestError
from tewatch.ingest.fingerprints import (
    asv_environment,
    cached_case_id,
    case_fingerprint,
    case_id,
    digest_of,
    machine_case_fingerprint,
    series_fingerprint,
)
from tewatch.ingest.records import CaseRecord, Check, RunRecord, parse_record
from tewatch.ingest.stderr_log import failure_text, split_sections

LABEL_COLUMNS = ("backend", "recipe", "mode", "rank", "world_size")
MACHINE_COLUMNS = {
    "machine",
    "cpu",
    "arch",
    "os",
    "ram",
    "gpu_model",
    "compute_capability",
    "gpu_count",
    "gpu_memory_mb",
    "driver",
    "cuda",
    "cublaslt",
    "cudnn",
}
UNKNOWN_GPU = "unknown"
SKIPPED_NAMES_KEPT = 100  # of the benchmarks an upload skipped, the names its summary lists


@dataclass
class CasePlan:
    fingerprint: str
    case_name: str
    params: dict[str, Any]
    gpu_model: str
    compute_capability: str
    labels: dict[str, Any]
    environment: str = ""  # the asv environment's name where it takes part in the identity
    group_key: str = ""  # the case on any machine of its GPU model
    machine: str = ""  # the asv machine's name

    def row(self) -> dict[str, Any]:
        columns = {name: self.labels.get(name) for name in LABEL_COLUMNS}
        for name in ("rank", "world_size"):
            columns[name] = columns[name] if isinstance(columns[name], int) else None
        for name in ("backend", "recipe", "mode"):
            columns[name] = None if columns[name] is None else str(columns[name])
        return {
            "fingerprint": self.fingerprint,
            "case_name": self.case_name,
            "params": self.params,
            "gpu_model": self.gpu_model,
            "compute_capability": self.compute_capability,
            "labels": self.labels,
            "environment": self.environment,
            "group_key": self.group_key,
            "machine": self.machine,
            **columns,
        }


class PlannedResult(NamedTuple):
    """One results row; the writer swaps the series fingerprint for the series id."""

    series_fingerprint: str
    status: str
    value: float | None
    samples: list[float] | None
    q_25: float | None
    q_75: float | None
    ci_99_a: float | None
    ci_99_b: float | None
    number: int | None
    repeat: int | None
    benchmark_version: str
    started_at: datetime | None
    duration: float | None
    round_sizes: list[int] | None = None


class PlannedVerdict(NamedTuple):
    """One verdicts row; the writer swaps the case fingerprint for the case id."""

    case_fingerprint: str
    status: str
    check: str
    metric: str | None
    metric_value: float | None
    tolerance: float | None
    exception_class: str | None
    message: str | None
    traceback_head: str | None
    reason: str | None
    extra_checks: list[dict[str, Any]]
    gpu_state: dict[str, Any]


class PlannedKernels(NamedTuple):
    """One case_kernels row; the writer swaps the case fingerprint for the case id."""

    case_fingerprint: str
    device: str
    profiled_calls: int
    launches_per_call: float | None
    syncs_per_call: float | None
    copies_per_call: float | None
    kernels: list[dict[str, Any]]


class PlannedTrajectory(NamedTuple):
    """One trajectories row; the writer swaps the case fingerprint for the case id."""

    case_fingerprint: str
    steps: int
    seed: int | None
    micro_batches: int | None
    tokens_per_step: int | None
    resumed_from_step: int | None
    loss: list[float | None]
    grad_norm: list[float | None]


@dataclass
class RunPlan:
    digest: str
    machine: dict[str, Any]
    environment: dict[str, Any]
    commit: dict[str, Any]
    run: dict[str, Any]
    benchmarks: dict[str, dict[str, Any]]  # name -> row
    # fingerprints as a case first stored now gets them; the writer finds stored cases by (group key,
    # machine) and their series by the stored case's fingerprint
    cases: dict[str, CasePlan]  # fingerprint -> case
    series: dict[str, tuple[str, str]]  # fingerprint -> (case fingerprint, benchmark name)
    results: list[PlannedResult]
    verdicts: list[PlannedVerdict]
    kernels: list[PlannedKernels] = field(default_factory=list)
    trajectories: list[PlannedTrajectory] = field(default_factory=list)
    files: list[tuple[str, bytes]] = field(default_factory=list)  # (role, content) as the store keeps them
    # benchmarks of the results file that benchmarks.json lacks: left out, as asv leaves them out
    skipped_benchmarks: list[str] = field(default_factory=list)
    results_format: int = 2  # the asv results format version of the uploaded file

    def summary(self) -> dict[str, Any]:
        """Counts by status; what was read differently from a current asv results file, where it was."""
        summary: dict[str, Any] = {
            "results": dict(Counter(r.status for r in self.results)),
            "verdicts": dict(Counter(v.status for v in self.verdicts)),
        }
        if self.skipped_benchmarks:
            summary["skipped_benchmarks"] = {
                "count": len(self.skipped_benchmarks),
                "names": self.skipped_benchmarks[:SKIPPED_NAMES_KEPT],
            }
        if self.results_format != 2:
            summary["results_format"] = self.results_format
        return summary


def case_name_of(benchmark: str) -> str:
    """`gemm.Gemm.track_seconds` -> `gemm.Gemm`; a module-level function is a case of its own."""
    parts = benchmark.split(".")
    if len(parts) >= 3 and parts[-2][:1].isupper():
        return ".".join(parts[:-1])
    return benchmark


def _utc(value: datetime | None) -> datetime | None:
    """Every stored time is UTC (SQLite keeps no offset); a time without a zone is taken as UTC."""
    return None if value is None else as_utc(value)


def _ms_to_datetime(ms: int | None) -> datetime | None:
    return None if ms is None else from_epoch_seconds(ms / 1000)


@functools.lru_cache(maxsize=1 << 15)
def _case_identity(
    case_name: str,
    param_names: tuple[str, ...],
    param_reprs: tuple[str, ...],
    gpu_model: str,
    compute_capability: str,
    environment: str,
    machine: str,
) -> tuple[str, dict[str, Any], str, str]:
    """(case id, params, case fingerprint, group key) of one asv parameter combination on one machine;
    the same every upload.

    The params dict is shared by every caller: treat it as read-only."""
    params = {name: decode_param(r) for name, r in zip(param_names, param_reprs, strict=True)}
    group_key = case_fingerprint(case_name, params, gpu_model, compute_capability, environment)
    return case_id(case_name, params), params, machine_case_fingerprint(group_key, machine), group_key


def build_plan(bundle: UploadBundle, bounds: UploadBounds = UNBOUNDED) -> RunPlan:
    """Raises IngestError when a file is malformed or the upload would create more than `bounds`."""
    results = parse_results(bundle.result, bounds=bounds)
    infos = parse_benchmarks(bundle.benchmarks)
    machine_keys = parse_machine(bundle.machine)
    run_record = parse_record(RunRecord, bundle.run, "run") if bundle.run is not None else None
    bounds.check_cases(len(bundle.cases), "cases", None, f"{len(bundle.cases):,} case records")
    records = _case_records(bundle)
    stderr = _stderr_text(bundle.asv_stderr)
    plan = _Planner(bundle, results, infos, machine_keys, run_record, records, stderr).plan()
    bounds.check_results(len(plan.results), "cases", "metrics", "asv's results and the case records' metrics")
    bounds.check_cases(len(plan.cases), "result", "results", "in its results and case records")
    return plan


def _stderr_text(content: bytes | None) -> str:
    if not content:
        return ""
    try:
        return stderr_log_file.decode(content)
    except stderr_log_file.StderrLogError as exc:
        raise IngestError(str(exc), file="asv_stderr") from None


def _case_records(bundle: UploadBundle) -> dict[str, CaseRecord]:
    """Case id -> record."""
    records: dict[str, CaseRecord] = {}
    for name, content in bundle.cases:
        file = f"cases/{name}"
        record = parse_record(CaseRecord, content, file)
        key = cached_case_id(record.case, record.params)
        if key in records:
            raise IngestError(f"a second record for case {key}", file=file)
        records[key] = record
    return records


class _Planner:
    def __init__(
        self,
        bundle: UploadBundle,
        results: AsvResults,
        infos: dict[str, BenchmarkInfo],
        machine_keys: dict[str, str],
        run_record: RunRecord | None,
        records: dict[str, CaseRecord],
        stderr: str,
    ) -> None:
        self.bundle, self.results, self.infos = bundle, results, infos
        self.machine_keys, self.run_record, self.records = machine_keys, run_record, records
        self.sections = split_sections(stderr)
        gpu = run_record.gpu if run_record else None
        self.gpu_model = machine_keys.get("gpu_model") or (gpu.model if gpu else "") or UNKNOWN_GPU
        self.compute_capability = machine_keys.get("compute_capability") or (
            gpu.compute_capability if gpu else ""
        )
        self.environment, self.environment_name = asv_environment(
            results.env_name, results.python, results.requirements
        )
        self.machine_name = machine_keys["machine"]
        self.cases: dict[str, CasePlan] = {}
        self._by_case_id: dict[str, CasePlan] = {}
        self.series: dict[str, tuple[str, str]] = {}
        self.benchmarks: dict[str, dict[str, Any]] = {}
        self.result_rows: list[PlannedResult] = []
        # case fingerprint -> (benchmark, param reprs) of the failures of cases that have no record
        self.unrecorded_failures: dict[str, list[tuple[str, tuple[str, ...]]]] = {}
        self.rounds = bool(run_record and run_record.ab)

    def plan(self) -> RunPlan:
        known = [b for b in self.results.benchmarks if b.name in self.infos]
        skipped = [b.name for b in self.results.benchmarks if b.name not in self.infos]
        if skipped and not known:
            raise IngestError(
                f"none of the results file's {len(skipped)} benchmarks is in benchmarks.json "
                f"(first: {skipped[0]!r}): is it the benchmarks.json of the same suite?",
                file="benchmarks",
            )
        for benchmark in known:
            self._add_benchmark(benchmark, self.infos[benchmark.name])
        self._add_metrics()
        verdicts = self._verdicts()
        return RunPlan(
            digest=self.bundle.digest(),
            machine=self._machine(),
            environment=self._environment(),
            commit=self._commit(),
            run=self._run(),
            benchmarks=self.benchmarks,
            cases=self.cases,
            series=self.series,
            results=self.result_rows,
            verdicts=verdicts,
            kernels=self._kernels(),
            trajectories=self._trajectories(),
            files=self.bundle.stored_files(),
            skipped_benchmarks=skipped,
            results_format=self.results.format_version,
        )

    def _case(
        self,
        key: str,
        case_name: str,
        params: dict[str, Any],
        identity: tuple[str, str] | None = None,
    ) -> CasePlan:
        """The case with this case id, created on first sight (labels from its record, if any);
        `identity`: its (fingerprint, group key) where already known."""
        case = self._by_case_id.get(key)
        if case is not None:
            return case
        if identity is None:
            group_key = case_fingerprint(
                case_name, params, self.gpu_model, self.compute_capability, self.environment
            )
            identity = (machine_case_fingerprint(group_key, self.machine_name), group_key)
        fingerprint, group_key = identity
        case = self.cases.get(fingerprint)
        if case is None:
            record = self.records.get(key)
            labels = (
                dict(record.labels) if record else {k: v for k, v in params.items() if k in LABEL_COLUMNS}
            )
            case = CasePlan(
                fingerprint,
                case_name,
                params,
                self.gpu_model,
                self.compute_capability,
                labels,
                self.environment_name,
                group_key,
                self.machine_name,
            )
            self.cases[fingerprint] = case
        self._by_case_id[key] = case
        return case

    def _series(self, benchmark: str, case: CasePlan) -> str:
        fingerprint = series_fingerprint(benchmark, case.fingerprint)
        self.series[fingerprint] = (case.fingerprint, benchmark)
        return fingerprint

    def _add_benchmark(self, benchmark: BenchmarkResult, info: BenchmarkInfo) -> None:
        case_name = case_name_of(benchmark.name)
        self.benchmarks[benchmark.name] = {
            "name": benchmark.name,
            "case_name": case_name,
            "param_names": info.param_names,
            "unit": info.unit,
            "type": info.type,
            "version": benchmark.version or info.version,
            "higher_is_better": info.unit in HIGHER_IS_BETTER_UNITS,
        }
        started_at = _ms_to_datetime(benchmark.started_at_ms)
        param_names = tuple(info.param_names)
        by_case_id = self._by_case_id
        # one pass per result row: the common path (a known case, a finite value) makes no further calls
        for combo in benchmark.combos:
            if len(combo.param_reprs) != len(param_names):
                raise IngestError(
                    f"{len(combo.param_reprs)} parameters but benchmarks.json names {len(param_names)}",
                    file="result",
                    field=f"results.{benchmark.name}.params",
                )
            key, params, fingerprint, group_key = _case_identity(
                case_name,
                param_names,
                combo.param_reprs,
                self.gpu_model,
                self.compute_capability,
                self.environment,
                self.machine_name,
            )
            value = combo.value
            if value is not None and math.isnan(value) and self.records and key not in self.records:
                continue  # a skip_params combination: not a case (docs/records.md)
            case = by_case_id.get(key) or self._case(key, case_name, params, (fingerprint, group_key))
            if value is not None and not math.isnan(value):
                status = "ok"
            else:
                status = self._result_status(key, case, benchmark.name, combo.param_reprs, value)
            series = series_fingerprint(benchmark.name, case.fingerprint)
            self.series[series] = (case.fingerprint, benchmark.name)
            self.result_rows.append(
                PlannedResult(
                    series,
                    status,
                    value if status == "ok" else None,
                    combo.samples,
                    combo.q_25,
                    combo.q_75,
                    combo.ci_99_a,
                    combo.ci_99_b,
                    combo.number,
                    combo.repeat,
                    benchmark.version,
                    started_at,
                    benchmark.duration,
                    self._round_sizes(key, benchmark.name, combo.samples) if self.rounds else None,
                )
            )

    def _round_sizes(self, key: str, series: str, samples: list[float] | None) -> list[int] | None:
        """The samples of each A/B round of one result, checked against the samples themselves."""
        record = self.records.get(key)
        sizes = record.round_sizes.get(series.rpartition(".")[2]) if record else None
        if sizes is None:
            return None
        if sum(sizes) != len(samples or ()):
            raise IngestError(
                f"round sizes add up to {sum(sizes)} samples, the results have {len(samples or ())}",
                file=f"cases/{key}.json",
                field=f"round_sizes.{series.rpartition('.')[2]}",
            )
        return sizes

    def _result_status(
        self, key: str, case: CasePlan, benchmark: str, reprs: tuple[str, ...], value: float | None
    ) -> str:
        """The status of a result without a finite value (those are "ok")."""
        record = self.records.get(key)
        verdict = record.verdict.status if record else None
        if verdict == "unsupported":
            return "unsupported"
        if value is not None:  # NaN: asv skipped it
            return "skipped"
        if verdict == "timeout":
            return "timeout"
        failure = failure_text(self.sections, benchmark, reprs)
        if record is None:
            self.unrecorded_failures.setdefault(case.fingerprint, []).append((benchmark, reprs))
        return "timeout" if failure and failure.timed_out else "failed"

    def _add_metrics(self) -> None:
        for key, record in sorted(self.records.items()):
            if not record.metrics:
                continue
            case = self._case(key, record.case, record.params)
            for metric_name, metric in sorted(record.metrics.items()):
                name = f"{record.case}.{metric_name}"
                if name in self.benchmarks and self.benchmarks[name]["type"] != "metric":
                    raise IngestError(
                        f"metric {metric_name!r} collides with the asv benchmark {name!r}",
                        file=f"cases/{key}.json",
                        field=f"metrics.{metric_name}",
                    )
                self.benchmarks[name] = {
                    "name": name,
                    "case_name": record.case,
                    "param_names": list(record.params),
                    "unit": metric.unit,
                    "type": "metric",
                    "version": "",
                    "higher_is_better": metric.unit in HIGHER_IS_BETTER_UNITS,
                }
                samples, round_sizes = metric.samples, None
                if self.rounds:
                    samples, round_sizes = self._metric_rounds(key, record, metric_name)
                self.result_rows.append(
                    PlannedResult(
                        self._series(name, case),
                        "ok",
                        metric.value,
                        samples,
                        None,
                        None,
                        None,
                        None,
                        None,
                        None,
                        "",
                        _utc(record.recorded_at),
                        None,
                        round_sizes,
                    )
                )

    def _metric_rounds(
        self, key: str, record: CaseRecord, metric_name: str
    ) -> tuple[list[float] | None, list[int] | None]:
        """(samples, round sizes) of a metric measured in A/B rounds: its own samples by round, or a
        one-value metric's value of each round (`round_values`), one sample a round."""
        metric = record.metrics[metric_name]
        if metric.samples is not None:
            return metric.samples, self._round_sizes(key, f"{record.case}.{metric_name}", metric.samples)
        values = record.round_values.get(metric_name)
        if values and len(values) > 1:
            return list(values), [1] * len(values)
        return None, None

    def _kernels(self) -> list[PlannedKernels]:
        rows = []
        for key, record in sorted(self.records.items()):
            block = record.kernels
            if block is None:
                continue
            rows.append(
                PlannedKernels(
                    self._case(key, record.case, record.params).fingerprint,
                    block.device,
                    block.profiled_calls,
                    block.launches_per_call,
                    block.syncs_per_call,
                    block.copies_per_call,
                    [row.model_dump() for row in block.table],
                )
            )
        return rows

    def _verdicts(self) -> list[PlannedVerdict]:
        verdicts: list[PlannedVerdict] = []
        for key, record in self.records.items():
            case = self._case(key, record.case, record.params)
            verdicts.append(
                _verdict_row(
                    case.fingerprint,
                    record.verdict,
                    [c.model_dump(exclude_none=True) for c in record.extra_checks],
                    record.gpu_state.model_dump() if record.gpu_state else {},
                )
            )
        for case_fp, failures in sorted(self.unrecorded_failures.items()):
            verdicts.append(_verdict_row(case_fp, self._derived_check(failures), [], {}))
        if self.run_record is None and not self.records:
            verdicts += self._measured_passes()
        return verdicts

    def _trajectories(self) -> list[PlannedTrajectory]:
        planned = []
        for key, record in self.records.items():
            found = record.trajectory
            if found is not None:
                planned.append(
                    PlannedTrajectory(
                        self._case(key, record.case, record.params).fingerprint,
                        found.steps,
                        found.seed,
                        found.micro_batches,
                        found.tokens_per_step,
                        found.resumed_from_step,
                        found.loss,
                        found.grad_norm,
                    )
                )
        return planned

    def _measured_passes(self) -> list[PlannedVerdict]:
        """A plain asv run (no sidecar): each case that produced a value and no failure passes."""
        measured = {self.series[r.series_fingerprint][0] for r in self.result_rows if r.status == "ok"}
        passed = Check(status="pass", check="asv")
        return [_verdict_row(fp, passed, [], {}) for fp in sorted(measured - self.unrecorded_failures.keys())]

    def _derived_check(self, failures: list[tuple[str, tuple[str, ...]]]) -> Check:
        texts = [failure_text(self.sections, benchmark, reprs) for benchmark, reprs in failures]
        found = [t for t in texts if t is not None]
        benchmark = failures[0][0]
        if not found:
            return Check(
                status="error",
                check="asv",
                message=f"asv stored no result for {benchmark} and asv's stderr log has no text for it",
            )
        first = next((t for t in found if t.timed_out), found[0])
        return Check(
            status="timeout" if first.timed_out else "error",
            check="asv",
            exception_class=first.exception_class,
            message=first.message,
            traceback_head=first.text,
        )

    def _machine(self) -> dict[str, Any]:
        keys = self.machine_keys
        gpu = self.run_record.gpu if self.run_record else None
        return {
            "digest": digest_of(keys),
            "name": keys["machine"],
            "gpu_model": self.gpu_model,
            "compute_capability": self.compute_capability,
            "gpu_count": _int_field(keys.get("gpu_count"), "gpu_count") or (gpu.count if gpu else 0),
            "gpu_memory_mb": _int_field(keys.get("gpu_memory_mb"), "gpu_memory_mb")
            or (gpu.memory_mb if gpu else None),
            **{
                name: keys.get(name, "")
                for name in ("driver", "cuda", "cublaslt", "cudnn", "cpu", "arch", "os", "ram")
            },
            "extra": {k: v for k, v in keys.items() if k not in MACHINE_COLUMNS},
        }

    def _environment(self) -> dict[str, Any]:
        versions = dict(self.run_record.versions) if self.run_record else {}
        row = {
            "python": versions.pop("python", None) or "",
            "torch": versions.pop("torch", None) or "",
            "te_version": versions.pop("te", None) or "",
            "te_commit": versions.pop("te_commit", None) or "",
            "extra": {"asv_env_name": self.results.env_name, **versions},
        }
        return {"digest": digest_of(row), **row}

    def _commit(self) -> dict[str, Any]:
        bundle = self.bundle
        committed_at = _utc(bundle.commit_date) or _ms_to_datetime(self.results.date_ms)
        if committed_at is not None and too_far_ahead(committed_at):
            file, where = ("commit_date", None) if bundle.commit_date else ("result", "date")
            raise IngestError(
                future_commit_message(self.results.commit_hash, committed_at), file=file, field=where
            )
        return {
            "repo": bundle.repo,
            "sha": self.results.commit_hash,
            "parents": [],
            "branch": bundle.branch,
            "committed_at": committed_at,
            "pr_number": bundle.pr_number,
            "merge_base_sha": bundle.merge_base_sha,
        }

    def _run(self) -> dict[str, Any]:
        record = self.run_record
        gpu_state: dict[str, Any] = {}
        if record:
            for name in ("gpu", "gpu_state_before", "gpu_state_after"):
                value = getattr(record, name)
                if value is not None:
                    gpu_state[name] = value.model_dump()
            gpu_state["wall_seconds"] = record.wall_seconds
            gpu_state["asv_exit_code"] = record.asv_exit_code
            gpu_state["backend_filter"] = record.backend_filter
            gpu_state["launch_method"] = record.launch_method
        return {
            "digest": self.bundle.digest(),
            "branch": self.bundle.branch,
            "pr_number": self.bundle.pr_number,
            "merge_base_sha": self.bundle.merge_base_sha,
            "asv_env_name": self.results.env_name,
            "profile": record.profile if record else "full",
            "started_at": _utc(record.started_at) if record else None,
            "finished_at": _utc(record.finished_at) if record else None,
            "gpu_state": gpu_state,
            "ab_session": record.ab.session if record and record.ab else None,
            "ab_side": record.ab.side if record and record.ab else None,
        }


def _int_field(value: str | None, name: str) -> int | None:
    if value in (None, ""):
        return None
    try:
        return int(value)
    except ValueError as exc:
        raise IngestError(f"expected an integer, got {value!r}", file="machine", field=name) from exc


def _verdict_row(case_fp: str, check: Check, extra_checks: list, gpu_state: dict) -> PlannedVerdict:
    return PlannedVerdict(
        case_fp,
        check.status,
        check.check or "",
        check.metric,
        check.value,
        check.tolerance,
        check.exception_class,
        check.message,
        check.traceback_head,
        check.reason,
        extra_checks,
        gpu_state,
    )

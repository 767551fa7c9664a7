"""Response models: what the API promises (and what /docs shows)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from typing import Annotated, Any, Self

from pydantic import BaseModel, BeforeValidator, Field

from tewatch.api.times import UtcTime
from tewatch.store.reads.run_reads import RunRow

# TE's version and commit, null where the run had no TE (a CPU run of torch-ref): the store keeps ""
TeText = Annotated[str | None, BeforeValidator(lambda value: value or None)]


class SkippedBenchmarks(BaseModel):
    count: int = Field(description="benchmarks of the results file that benchmarks.json lacks")
    names: list[str] = Field(description="the first 100 of them, by name")


class UploadAnswer(BaseModel):
    run_id: int
    created: bool
    digest: str
    results: dict[str, int]
    verdicts: dict[str, int]
    url: str
    skipped_benchmarks: SkippedBenchmarks | None = Field(
        None, description="left out as asv leaves them out: not stored, the rest of the file is"
    )
    results_format: int = Field(
        2,
        description="asv's results format of the file as uploaded; 1 (asv 0.2 to 0.4) is read as asv reads it",
    )


class ErrorAnswer(BaseModel):
    detail: str
    message: str | None = None
    file: str | None = None
    field: str | None = None
    line: int | None = None
    column: int | None = None


class BusyAnswer(BaseModel):
    detail: str
    retry_after: int


# FastAPI's `responses`: status code -> the answer's model and description
Responses = dict[int | str, dict[str, Any]]

NOT_FOUND: Responses = {404: {"model": ErrorAnswer, "description": "nothing of that id"}}
BUSY: Responses = {
    503: {
        "model": BusyAnswer,
        "description": "the store was busy or could not be reached: nothing was stored, try again after "
        "the answer's Retry-After (seconds)",
    }
}


class RunSummary(BaseModel):
    id: int
    digest: str
    branch: str | None
    pr_number: int | None
    merge_base_sha: str | None
    asv_env_name: str
    profile: str
    started_at: UtcTime | None
    finished_at: UtcTime | None
    uploaded_at: UtcTime
    summary: dict[str, dict[str, int]]
    commit_sha: str
    repo: str
    committed_at: UtcTime | None
    machine_id: int
    machine_name: str
    gpu_model: str
    compute_capability: str
    torch: str
    te_version: TeText
    te_commit: TeText
    python: str

    @classmethod
    def of(cls, row: RunRow, **more: Any) -> Self:
        """The API's run from the read layer's row (tewatch.store.reads.run_reads): where a run changes shape on
        its way out, the one place."""
        commit, machine = row.commit, row.machine
        values = _attributes(row.run, _FROM_RUN) | _attributes(row.environment, _FROM_ENVIRONMENT)
        values |= _attributes(machine, ("gpu_model", "compute_capability"))
        values |= {"commit_sha": commit.sha, "repo": commit.repo, "committed_at": commit.committed_at}
        values |= {"machine_id": machine.id, "machine_name": machine.name}
        return cls(**values, **more)


_FROM_ENVIRONMENT = ("torch", "te_version", "te_commit", "python")
_FROM_RUN = (
    "id",
    "digest",
    "branch",
    "pr_number",
    "merge_base_sha",
    "asv_env_name",
    "profile",
    "started_at",
    "finished_at",
    "uploaded_at",
    "summary",
)


def _attributes(source: object, names: Sequence[str]) -> dict[str, Any]:
    return {name: getattr(source, name) for name in names}


class RunFileEntry(BaseModel):
    role: str
    digest: str


class RunDetail(RunSummary):
    gpu_state: dict[str, Any]
    machine: dict[str, Any]
    environment: dict[str, Any]
    files: list[RunFileEntry]

    @classmethod
    def with_files(cls, row: RunRow, files: list[dict[str, str]]) -> Self:
        return cls.of(
            row,
            gpu_state=row.run.gpu_state,
            machine=asdict(row.machine),
            environment=asdict(row.environment),
            files=files,
        )


class TrajectoryOut(BaseModel):
    """A training case's loss and gradient norm at every optimizer step of one run (docs/training-report.md)."""

    run_id: int
    case_id: int
    steps: int
    seed: int | None
    micro_batches: int | None
    tokens_per_step: int | None
    resumed_from_step: int | None = Field(description="set on a resume check's trajectory")
    loss: list[float | None] = Field(description="one per step, step k at index k - 1; null: NaN or infinite")
    grad_norm: list[float | None]


class Paged(BaseModel):
    total: int
    limit: int
    offset: int


class RunPage(Paged):
    items: list[RunSummary]


class CommitEntry(BaseModel):
    id: int
    repo: str
    sha: str
    parents: list[str]
    branch: str | None
    committed_at: UtcTime | None
    pr_number: int | None
    merge_base_sha: str | None
    runs: int


class CommitPage(Paged):
    items: list[CommitEntry]


class BenchmarkEntry(BaseModel):
    id: int
    name: str
    case_name: str
    param_names: list[str]
    unit: str
    type: str
    version: str
    higher_is_better: bool


class MachineEntry(BaseModel):
    id: int
    digest: str
    name: str
    gpu_model: str
    compute_capability: str
    gpu_count: int
    gpu_memory_mb: int | None
    driver: str
    cuda: str
    cublaslt: str
    cudnn: str
    cpu: str
    arch: str
    os: str
    ram: str
    extra: dict[str, Any]


class CaseFields(BaseModel):
    case_name: str
    params: dict[str, Any]
    gpu_model: str
    compute_capability: str
    backend: str | None
    recipe: str | None
    mode: str | None
    rank: int | None
    world_size: int | None
    labels: dict[str, Any]
    environment: str = ""  # asv's environment where it is part of the case's identity
    machine: str = Field(
        "", description="the asv machine (machine.json's `machine`) the case was measured on"
    )
    group_key: str = Field(
        "",
        description="the same for one case on every machine of its GPU model: its machines' cases share it",
    )


class SeriesRef(BaseModel):
    id: int
    benchmark: str
    unit: str


class CaseEntry(CaseFields):
    id: int
    series: list[SeriesRef]


class CasePage(Paged):
    items: list[CaseEntry]


class KernelEntry(BaseModel):
    name: str = Field(description="the kernel's normalised name (docs/kernels.md)")
    calls_per_call: float = Field(description="its launches in one case call")
    total_seconds: float = Field(description="its device time in one case call")
    mean_seconds: float = Field(description="its device time per launch")


class CaseKernelTable(BaseModel):
    run_id: int
    commit_sha: str
    te_version: str | None
    branch: str | None
    pr_number: int | None
    started_at: UtcTime | None
    device: str = Field(
        description="cuda: CUPTI's kernels, memsets and copies; cpu: top-level aten operators"
    )
    profiled_calls: int
    launches_per_call: float | None
    syncs_per_call: float | None
    copies_per_call: float | None
    kernels: list[KernelEntry] = Field(description="largest total first")


class CaseKernelPage(Paged):
    case_id: int
    items: list[CaseKernelTable] = Field(description="newest run first")


class SeriesPoint(BaseModel):
    run_id: int
    status: str
    value: float | None
    samples: list[float] | None = Field(
        None, description="the stored samples, thinned evenly to `samples_per_point` where there are more"
    )
    sample_count: int | None = Field(None, description="how many samples are stored (None: not read)")
    q_25: float | None
    q_75: float | None
    ci_99_a: float | None
    ci_99_b: float | None
    number: int | None
    repeat: int | None
    benchmark_version: str
    started_at: UtcTime | None
    branch: str | None
    pr_number: int | None
    uploaded_at: UtcTime
    commit_sha: str
    committed_at: UtcTime | None
    machine_id: int
    machine_name: str
    te_version: TeText
    verdict: str | None
    gpu_state: dict[str, Any]


class SeriesAnswer(CaseFields):
    id: int
    fingerprint: str
    case_id: int
    benchmark: str
    unit: str
    type: str
    higher_is_better: bool
    total_points: int
    next_offset: int | None = Field(
        None, description="`offset` of the next, older page; None when no older point is left"
    )
    points: list[SeriesPoint]


class RunResult(CaseFields):
    series_id: int
    case_id: int
    benchmark: str
    unit: str
    status: str
    value: float | None
    samples: list[float] | None = None
    q_25: float | None
    q_75: float | None
    number: int | None
    repeat: int | None
    benchmark_version: str
    started_at: UtcTime | None
    verdict: str | None
    exception_class: str | None
    gpu_state: dict[str, Any]


class RunResultPage(Paged):
    items: list[RunResult]


class LatestVerdict(CaseFields):
    case_id: int
    run_id: int
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
    commit_sha: str
    branch: str | None
    uploaded_at: UtcTime


class ComparisonRow(CaseFields):
    series_id: int
    benchmark: str
    unit: str
    higher_is_better: bool
    base_status: str | None
    base_value: float | None
    head_status: str | None
    head_value: float | None
    base_verdict: str | None
    head_verdict: str | None
    ratio: float | None
    change: str
    verdict: str | None = Field(
        None,
        description="the detector's verdict on both runs' samples; none where not compared",
    )
    effect: float | None = Field(None, description="head / base - 1, the detector's estimate")
    ci_low: float | None = None
    ci_high: float | None = None


class Comparison(BaseModel):
    base: int
    head: int
    rows: list[ComparisonRow]


class Health(BaseModel):
    status: str
    version: str
    database: str
    schema_revision: str | None

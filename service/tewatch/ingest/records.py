"""tewatch's sidecar records (docs/records.md): strict models, unknown fields are an error.

Values must also be ones the store keeps (tewatch.store.schema.limits): text no longer than its column, no NUL
or lone surrogate anywhere, integers within their column, times within the window, JSON values that are
JSON."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from tewatch.ingest.errors import IngestError
from tewatch.ingest.jsonfile import load_json_object
from tewatch.store.schema.limits import (
    INT32_MAX,
    INT64_MAX,
    INT64_MIN,
    int_problem,
    json_problem,
    json_text_is_storable,
    max_chars,
    time_problem,
)
from tewatch.store.schema.models import Benchmark, Case, Environment, Machine, Run, Verdict

VerdictStatusName = Literal["pass", "fail_accuracy", "error", "unsupported", "timeout", "oom"]


def _column_text(column: Any) -> Any:
    """A string no longer than `column` keeps."""
    return Annotated[str, Field(max_length=max_chars(column))]


def _in_window(value: datetime) -> datetime:
    problem = time_problem(value)
    if problem:
        raise ValueError(problem)
    return value


def _fits(what: str, text: str, column: Any) -> None:
    _fits_chars(what, text, max_chars(column))


def _fits_chars(what: str, text: str, limit: int | None) -> None:
    if limit is not None and len(text) > limit:
        raise ValueError(f"{what} is {len(text)} characters long; the store keeps at most {limit}")


Time = Annotated[datetime, AfterValidator(_in_window)]
Count = Annotated[int, Field(ge=0, le=INT32_MAX)]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, populate_by_name=True)


class GpuInfo(Strict):
    model: _column_text(Machine.gpu_model)
    compute_capability: _column_text(Machine.compute_capability) = ""
    count: Count = 0
    memory_mb: Count | None = None
    sm_clock_max_mhz: float | None = None
    mem_clock_max_mhz: float | None = None
    power_limit_w: float | None = None
    clocks_locked: bool | None = None
    multiprocessors: int | None = None
    l2_bytes: int | None = None
    applications_sm_clock_mhz: float | None = None


def _as_list(value: Any) -> Any:
    """A reading of one GPU may come as a bare value (run.json's gpu_state_before/after on one GPU)."""
    return value if isinstance(value, list) else [value]


class GpuState(Strict):
    """One reading per GPU."""

    sm_clock_mhz: Annotated[list[float], BeforeValidator(_as_list)] = Field(default_factory=list)
    mem_clock_mhz: Annotated[list[float], BeforeValidator(_as_list)] = Field(default_factory=list)
    power_w: Annotated[list[float], BeforeValidator(_as_list)] = Field(default_factory=list)
    temperature_c: Annotated[list[float], BeforeValidator(_as_list)] = Field(default_factory=list)
    throttle_reasons: Annotated[list[str], BeforeValidator(_as_list)] = Field(default_factory=list)


class ForkCheck(Strict):
    safe: bool
    reason: str = ""


class AbRounds(Strict):
    """The A/B session a run belongs to (tewatch run --ab): both sides share `session`."""

    session: str = Field(min_length=1, max_length=64)
    side: Literal["base", "head"]
    arm: str = Field(
        default="", max_length=64
    )  # the runner's name of the side (several heads may share a base)
    rounds: int = Field(ge=1, le=1000)


# run.json's versions kept in text columns of their own (the others go to a JSON column)
VERSION_COLUMNS = {
    "python": Environment.python,
    "torch": Environment.torch,
    "te": Environment.te_version,
    "te_commit": Environment.te_commit,
}


class RunRecord(Strict):
    schema_: Literal["tewatch.run/1"] = Field(alias="schema")
    profile: _column_text(Run.profile) = "full"
    backend_filter: str | None = None
    bench_filter: str | None = None
    commit: str | None = None
    commit_source: str | None = None
    capabilities: dict[str, Any] = Field(default_factory=dict)
    started_at: Time | None = None
    finished_at: Time | None = None
    wall_seconds: float | None = None
    asv_exit_code: int | None = None
    launch_method: Literal["spawn", "forkserver"] | None = None
    fork_check: ForkCheck | None = None
    versions: dict[str, str | None] = Field(default_factory=dict)
    gpu: GpuInfo | None = None
    gpu_state_before: GpuState | None = None
    gpu_state_after: GpuState | None = None
    ab: AbRounds | None = None

    @field_validator("versions")
    @classmethod
    def _versions_fit(cls, versions: dict[str, str | None]) -> dict[str, str | None]:
        for key, column in VERSION_COLUMNS.items():
            if versions.get(key) is not None:
                _fits(f"versions.{key}", versions[key], column)
        return versions


class Check(Strict):
    status: VerdictStatusName
    check: _column_text(Verdict.check) | None = None
    metric: _column_text(Verdict.metric) | None = None
    value: float | None = None
    tolerance: float | None = None
    exception_class: _column_text(Verdict.exception_class) | None = None
    message: str | None = None
    traceback_head: str | None = None
    reason: str | None = None
    details: dict[str, Any] | None = None


class Metric(Strict):
    value: float
    unit: _column_text(Benchmark.unit)
    samples: list[float] | None = None  # per call, where the metric was measured call by call


MAX_KERNEL_ROWS = 500  # rows of one case's kernel table (docs/kernels.md): more is refused, naming the record
MAX_KERNEL_NAME_CHARS = 1000
PerCall = Annotated[float, Field(ge=0.0)]


class KernelRow(Strict):
    """One normalised kernel name of a case: its launches and device time in one case call."""

    name: Annotated[str, Field(min_length=1, max_length=MAX_KERNEL_NAME_CHARS)]
    calls_per_call: PerCall
    total_seconds: PerCall  # device time of its launches in one case call
    mean_seconds: PerCall  # per launch


class KernelsBlock(Strict):
    """What the profiler pass saw a case call run (docs/kernels.md): its kernels, and its launches,
    host-device synchronisations and memory copies per call."""

    device: Literal["cuda", "cpu"]
    profiled_calls: Annotated[int, Field(ge=1, le=INT32_MAX)]
    table: Annotated[list[KernelRow], Field(max_length=MAX_KERNEL_ROWS)] = Field(default_factory=list)
    launches_per_call: PerCall | None = None
    syncs_per_call: PerCall | None = None
    copies_per_call: PerCall | None = None

    @field_validator("table")
    @classmethod
    def _names_once(cls, table: list[KernelRow]) -> list[KernelRow]:
        seen: set[str] = set()
        for row in table:
            if row.name in seen:
                raise ValueError(f"kernel {row.name[:80]!r} is listed twice; names are normalised once")
            seen.add(row.name)
        return table


MAX_TRAJECTORY_STEPS = 10_000  # optimizer steps one trajectory may hold (docs/training-report.md)
StepValue = Annotated[float | None, Field(allow_inf_nan=False)]  # null: the step's value was NaN or infinite


class Trajectory(Strict):
    """A training case's loss and gradient norm at every optimizer step (docs/records.md, "Trajectory")."""

    seed: int | None = Field(None, ge=INT64_MIN, le=INT64_MAX)
    steps: int = Field(ge=1, le=MAX_TRAJECTORY_STEPS)
    micro_batches: Count | None = None
    tokens_per_step: Count | None = None
    loss: list[StepValue] = Field(max_length=MAX_TRAJECTORY_STEPS)
    grad_norm: list[StepValue] = Field(max_length=MAX_TRAJECTORY_STEPS)
    resumed_from_step: Count | None = None

    @model_validator(mode="after")
    def _one_value_per_step(self) -> Trajectory:
        for name in ("loss", "grad_norm"):
            if len(getattr(self, name)) != self.steps:
                raise ValueError(
                    f"{name} has {len(getattr(self, name))} values for {self.steps} steps: one per "
                    "optimizer step, null where it was NaN or infinite"
                )
        return self


# labels copied into columns of the case (docs/records.md)
LABEL_TEXT_COLUMNS = {"backend": Case.backend, "recipe": Case.recipe, "mode": Case.mode}
LABEL_INT_COLUMNS = ("rank", "world_size")
_LABEL_TEXT_LIMITS = {key: max_chars(column) for key, column in LABEL_TEXT_COLUMNS.items()}


class CaseRecord(Strict):
    schema_: Literal["tewatch.case/1"] = Field(alias="schema")
    case: _column_text(Case.case_name)
    params: dict[str, Any] = Field(default_factory=dict)
    labels: dict[str, str | int | float | bool | None] = Field(default_factory=dict)
    verdict: Check
    extra_checks: list[Check] = Field(default_factory=list)
    metrics: dict[str, Metric] = Field(default_factory=dict)
    gpu_state: GpuState | None = None
    perturbations: dict[str, int] = Field(default_factory=dict)
    notes: list[str] = Field(default_factory=list)
    one_shot: bool = False  # a check timed once as a by-product: A/B rounds do not repeat it
    # A/B rounds: samples of each round per series of the case ("track_seconds", "kernel_seconds")
    round_sizes: dict[str, list[Annotated[int, Field(ge=0)]]] = Field(default_factory=dict)
    # A/B rounds only: each round's value of a one-value metric (round 1's is the metric's value)
    round_values: dict[str, list[float]] = Field(default_factory=dict)
    kernels: KernelsBlock | None = None
    recorded_at: Time | None = None
    trajectory: Trajectory | None = None

    @field_validator("labels")
    @classmethod
    def _labels_fit(cls, labels: dict[str, Any]) -> dict[str, Any]:
        for key, limit in _LABEL_TEXT_LIMITS.items():
            value = labels.get(key)
            if value is not None and (not isinstance(value, str) or limit is None or len(value) > limit):
                _fits_chars(f"labels.{key}", str(value), limit)
        for key in LABEL_INT_COLUMNS:
            value = labels.get(key)
            problem = isinstance(value, int) and int_problem(value)
            if problem:
                raise ValueError(f"labels.{key}: {problem}")
        return labels

    @field_validator("metrics")
    @classmethod
    def _metric_names_fit(cls, metrics: dict[str, Metric], info: ValidationInfo) -> dict[str, Metric]:
        """Each metric is stored as the benchmark `<case>.<metric>`."""
        case = info.data.get("case", "")
        for name in metrics:
            _fits(f"the benchmark name of metric {name[:40]!r}", f"{case}.{name}", Benchmark.name)
        return metrics


RecordT = TypeVar("RecordT", bound=Strict)


def parse_record(model: type[RecordT], content: bytes, file: str) -> RecordT:
    try:
        record = model.model_validate_json(content)
    except ValidationError:
        pass  # parsed again below, step by step, for an error that names the file, line and field
    else:
        return record if json_text_is_storable(content) else _storable(record, file)
    data = load_json_object(content, file)
    try:
        return _storable(model.model_validate(data), file)
    except ValidationError as exc:
        first = exc.errors()[0]
        location = ".".join(str(part) for part in first["loc"]).replace("schema_", "schema")
        more = exc.error_count() - 1
        message = first["msg"].removeprefix("Value error, ")
        message += f" (and {more} more error{'s' if more > 1 else ''})" if more else ""
        if first["type"] == "extra_forbidden":
            message = "unknown field; docs/records.md lists the fields a record may have"
        raise IngestError(message, file=file, field=location or None) from exc


def _storable(record: RecordT, file: str) -> RecordT:
    """The record, if the store can keep every value in it (a NUL or a lone surrogate in any text, an
    integer beyond 64 bits or a NaN in a free-form field, nesting too deep: an IngestError naming it)."""
    # None is storable: leaving out the fields that are None leaves orjson's output free of `null` unless
    # a free-form value holds one (or a NaN), so that nearly every record is checked at C speed alone
    if json_problem(record.model_dump(by_alias=True, exclude_none=True)) is None:
        return record
    problem = json_problem(record.model_dump(by_alias=True))
    if problem:
        where, why = problem
        raise IngestError(why, file=file, field=where or None)
    return record

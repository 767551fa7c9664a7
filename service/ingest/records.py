"""tewatch's sidecar records (docs/records.md): strict models, unknown fields are an error."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError
from tewatch.ingest.errors import IngestError
from tewatch.ingest.jsonfile import load_json_object

VerdictStatusName = Literal["pass", "fail_accuracy", "error", "unsupported", "timeout", "oom"]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, populate_by_name=True)


class GpuInfo(Strict):
    model: str
    compute_capability: str = ""
    count: int = 0
    memory_mb: int | None = None
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
    arm: str = Field(default="", max_length=64)  # the runner's name of the side (several heads may share a base)
    rounds: int = Field(ge=1, le=1000)


class RunRecord(Strict):
    schema_: Literal["tewatch.run/1"] = Field(alias="schema")
    profile: str = "full"
    backend_filter: str | None = None
    bench_filter: str | None = None
    commit: str | None = None
    commit_source: str | None = None
    capabilities: dict[str, Any] = Field(default_factory=dict)
    started_at: datetime | None = None
    finished_at: datetime | None = None
    wall_seconds: float | None = None
    asv_exit_code: int | None = None
    launch_method: Literal["spawn", "forkserver"] | None = None
    fork_check: ForkCheck | None = None
    versions: dict[str, str | None] = Field(default_factory=dict)
    gpu: GpuInfo | None = None
    gpu_state_before: GpuState | None = None
    gpu_state_after: GpuState | None = None
    ab: AbRounds | None = None


class Check(Strict):
    status: VerdictStatusName
    check: str | None = None
    metric: str | None = None
    value: float | None = None
    tolerance: float | None = None
    exception_class: str | None = None
    message: str | None = None
    traceback_head: str | None = None
    reason: str | None = None
    details: dict[str, Any] | None = None


class Metric(Strict):
    value: float
    unit: str
    samples: list[float] | None = None  # per call, where the metric was measured call by call


class CaseRecord(Strict):
    schema_: Literal["tewatch.case/1"] = Field(alias="schema")
    case: str
    params: dict[str, Any] = Field(default_factory=dict)
    labels: dict[str, str | int | float | bool | None] = Field(default_factory=dict)
    verdict: Check
    extra_checks: list[Check] = Field(default_factory=list)
    metrics: dict[str, Metric] = Field(default_factory=dict)
    gpu_state: GpuState | None = None
    perturbations: dict[str, int] = Field(default_factory=dict)
    notes: list[str] = Field(default_factory=list)
    # A/B rounds: samples of each round per series of the case ("track_seconds", "kernel_seconds")
    round_sizes: dict[str, list[Annotated[int, Field(ge=0)]]] = Field(default_factory=dict)
    recorded_at: datetime | None = None


RecordT = TypeVar("RecordT", bound=Strict)


def parse_record(model: type[RecordT], content: bytes, file: str) -> RecordT:
    try:
        return model.model_validate_json(content)
    except ValidationError:
        pass  # parsed again below, step by step, for an error that names the file, line and field
    data = load_json_object(content, file)
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        location = ".".join(str(part) for part in first["loc"]).replace("schema_", "schema")
        more = exc.error_count() - 1
        message = first["msg"] + (f" (and {more} more error{'s' if more > 1 else ''})" if more else "")
        if first["type"] == "extra_forbidden":
            message = "unknown field; docs/records.md lists the fields a record may have"
        raise IngestError(message, file=file, field=location or None) from exc

"""Request and answer bodies of the alert, webhook and detection routes."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from tewatch.api.openapi_doc import NO_NUL
from tewatch.api.times import UtcTime
from tewatch.store.schema.alert_models import AlertStatus
from tewatch.store.schema.limits import text_problem


def _storable(text: str) -> str:
    problem = text_problem(text)
    if problem:
        raise ValueError(problem)
    return text


# text a request writes to the store: no NUL (PostgreSQL refuses it)
StoredText = Annotated[str, AfterValidator(_storable), Field(json_schema_extra={"pattern": NO_NUL})]


class _Rows(BaseModel):
    model_config = ConfigDict(from_attributes=True)


class StatusChangeOut(_Rows):
    from_status: str | None
    to_status: str
    actor: str
    note: str
    at: UtcTime


class AlertOut(_Rows):
    id: int
    kind: str
    status: str
    title: str
    series_id: int | None
    case_id: int | None
    detection_id: int | None
    comparison_id: int | None
    verdict_id: int | None
    run_id: int | None
    branch: str | None
    pr_number: int | None
    gpu_model: str
    effect: float | None
    details: dict
    created_at: UtcTime
    updated_at: UtcTime


class AlertDetailOut(AlertOut):
    status_changes: list[StatusChangeOut]


class StatusChangeIn(BaseModel):
    status: AlertStatus
    note: StoredText = Field(default="", max_length=5000)
    actor: StoredText = Field(default="", max_length=200)


class SubscriptionIn(BaseModel):
    url: StoredText = Field(max_length=2000)
    secret: StoredText = Field(max_length=500)
    event_types: list[str]
    description: StoredText = Field(default="", max_length=500)


class SubscriptionOut(_Rows):
    id: int
    kind: str = "webhook"  # or "github": the GitHub integration's, kept in step with its settings
    url: str
    event_types: list[str]
    description: str
    active: bool
    created_at: UtcTime


class AttemptOut(_Rows):
    attempt: int
    started_at: UtcTime
    duration_ms: float
    status_code: int | None
    error: str | None


class DeliveryOut(_Rows):
    id: str
    event_id: str
    subscription_id: int
    status: str
    attempts: int
    next_attempt_at: UtcTime
    last_status_code: int | None
    last_error: str | None
    delivered_at: UtcTime | None
    created_at: UtcTime


class DetectionOut(_Rows):
    id: int
    series_id: int | None
    series_key: str
    branch: str
    gpu_model: str
    run_id: int
    commit_id: int
    before_commit_id: int
    first_possible_commit_id: int
    direction: str
    baseline: float
    level_after: float
    lower_limit: float
    upper_limit: float
    effect: float
    z: float
    environment_shift: bool
    environment_changes: dict
    detector_version: str
    active: bool
    created_at: UtcTime


class ComparisonOut(_Rows):
    id: int
    pr_number: int
    head_run_id: int
    base_run_ids: list[int]
    series_id: int | None
    verdict: str
    baseline: float | None
    head: float | None
    effect: float | None
    ci_low: float | None
    ci_high: float | None
    p_value: float | None
    q_value: float | None
    n_base: int
    n_head: int
    between_run_sigma: float | None
    noise_source: str | None
    rounds: int | None = None  # A/B rounds paired (null: one run per side)
    modes: list[float] | None = None  # the two speeds of an `unstable` series
    primary: bool | None = None  # the steadier timing of its case, the one that says `unchanged`
    min_effect: float
    detector_version: str


class DetectIn(BaseModel):
    branch: StoredText = Field(default="main", max_length=200)
    # detection after these uploads (sent with `detect=later`) instead of over the branch's whole history
    runs: list[Annotated[int, Field(ge=1, lt=2**31)]] | None = Field(default=None, max_length=1_000_000)


class DetectOut(BaseModel):
    series: int
    change_points: int
    new_regressions: int
    new_improvements: int
    environment_shifts: int
    withdrawn: int
    events: int
    correctness_alerts: int = 0
    resolved_alerts: int = 0
    returned: int = 0  # regression alerts resolved because their series came back
    environment_alerts: int = 0  # new alerts on a shift most series of an environment share
    kernel_alerts: int = 0  # new alerts on a case whose kernels changed (docs/kernels.md)

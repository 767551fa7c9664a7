"""Typed rows of the store's tables: one frozen dataclass per table, its fields the table's columns.

Reads select `columns(X)` and build the row with `row_of(X, values)`; no ORM entity leaves the store.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any, TypeVar

from sqlalchemy import Column

from tewatch.store.schema.alert_models import Alert, AlertKind, AlertStatus, AlertStatusChange, PrComparison
from tewatch.store.schema.models import (
    Case,
    Commit,
    Environment,
    Machine,
    Run,
    Trajectory,
    Verdict,
    VerdictStatus,
)


@dataclass(frozen=True)
class MachineFacts:
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
    extra: dict


@dataclass(frozen=True)
class EnvironmentFacts:
    id: int
    digest: str
    python: str
    torch: str
    te_version: str
    te_commit: str
    extra: dict


@dataclass(frozen=True)
class CommitFacts:
    id: int
    repo: str
    sha: str
    parents: list
    branch: str | None
    committed_at: datetime | None
    pr_number: int | None
    merge_base_sha: str | None
    ordered_at: datetime | None


@dataclass(frozen=True)
class RunFacts:
    id: int
    digest: str
    machine_id: int
    environment_id: int
    commit_id: int
    branch: str | None
    pr_number: int | None
    merge_base_sha: str | None
    asv_env_name: str
    profile: str
    started_at: datetime | None
    finished_at: datetime | None
    uploaded_at: datetime
    gpu_state: dict
    summary: dict
    ab_session: str | None
    ab_side: str | None


@dataclass(frozen=True)
class CaseFacts:
    id: int
    fingerprint: str
    case_name: str
    params: dict
    gpu_model: str
    compute_capability: str
    backend: str | None
    recipe: str | None
    mode: str | None
    rank: int | None
    world_size: int | None
    labels: dict
    environment: str
    group_key: str
    machine: str


@dataclass(frozen=True)
class VerdictFacts:
    id: int
    run_id: int
    case_id: int
    status: VerdictStatus
    check: str
    metric: str | None
    metric_value: float | None
    tolerance: float | None
    exception_class: str | None
    message: str | None
    traceback_head: str | None
    reason: str | None
    extra_checks: list
    gpu_state: dict


@dataclass(frozen=True)
class PrComparisonFacts:
    id: int
    pr_number: int
    head_run_id: int
    base_run_ids: list
    series_id: int | None
    series_key: str
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
    rounds: int | None
    modes: list | None
    primary: bool | None
    min_effect: float
    detector_version: str
    config: dict
    created_at: datetime


@dataclass(frozen=True)
class AlertFacts:
    id: int
    dedupe_key: str
    kind: AlertKind
    status: AlertStatus
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
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True)
class AlertStatusChangeFacts:
    id: int
    alert_id: int
    from_status: str | None
    to_status: str
    actor: str
    note: str
    at: datetime


@dataclass(frozen=True)
class TrajectoryFacts:
    id: int
    run_id: int
    case_id: int
    steps: int
    seed: int | None
    micro_batches: int | None
    tokens_per_step: int | None
    resumed_from_step: int | None
    loss: list[float | None]
    grad_norm: list[float | None]


TABLES: dict[type, Any] = {  # row type -> its table
    MachineFacts: Machine.__table__,
    EnvironmentFacts: Environment.__table__,
    CommitFacts: Commit.__table__,
    RunFacts: Run.__table__,
    CaseFacts: Case.__table__,
    VerdictFacts: Verdict.__table__,
    PrComparisonFacts: PrComparison.__table__,
    AlertFacts: Alert.__table__,
    AlertStatusChangeFacts: AlertStatusChange.__table__,
    TrajectoryFacts: Trajectory.__table__,
}

Row = TypeVar("Row")


def columns(row_type: type) -> list[Column[Any]]:
    """The table's columns in the order of the row type's fields."""
    table = TABLES[row_type]
    return [table.c[f.name] for f in fields(row_type)]


def row_of(row_type: type[Row], values: Sequence[Any]) -> Row:
    """The typed row of `values`, selected as `columns(row_type)`."""
    return row_type(*values)


def facts_of(row_type: type[Row], entity: object) -> Row:
    """The typed row of an entity another read returned."""
    names = [f.name for f in fields(row_type)]  # type: ignore[arg-type]
    return row_type(*(getattr(entity, name) for name in names))

"""The tables. One run of `asv run` on one machine becomes one Run with its Results and Verdicts.

Identity:
- a Case is one asv class with one combination of params, on one GPU model and compute capability,
  in one asv environment unless it is asv's `existing` one (its group key), on one asv machine (the
  machine name of machine.json, as asv tells machines apart); a Series is one benchmark method of a
  case. History is read per series; the cases of one group key are the machines of one GPU model.
- driver, CUDA, torch and TE versions are context on the Run (Machine, Environment), never identity.
"""

from __future__ import annotations

import enum
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, ClassVar

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    Enum,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Table,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship


def utcnow() -> datetime:
    return datetime.now(UTC)


class Base(DeclarativeBase):
    type_annotation_map: ClassVar[dict[Any, Any]] = {dict: JSON, list: JSON}
    if TYPE_CHECKING:  # every model here is a declarative table; DeclarativeBase types it as any FromClause
        __table__: ClassVar[Table]


class ResultStatus(str, enum.Enum):
    ok = "ok"
    failed = "failed"
    skipped = "skipped"
    unsupported = "unsupported"
    timeout = "timeout"


class VerdictStatus(str, enum.Enum):
    passed = "pass"
    fail_accuracy = "fail_accuracy"
    error = "error"
    unsupported = "unsupported"
    timeout = "timeout"
    oom = "oom"


def _enum(cls: type[enum.Enum], name: str) -> Enum:
    return Enum(cls, name=name, native_enum=False, values_callable=lambda e: [m.value for m in e], length=16)


class Machine(Base):
    __tablename__ = "machines"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    digest: Mapped[str] = mapped_column(String(64), unique=True)
    name: Mapped[str] = mapped_column(String(200))
    gpu_model: Mapped[str] = mapped_column(String(200), index=True)
    compute_capability: Mapped[str] = mapped_column(String(16), default="")
    gpu_count: Mapped[int] = mapped_column(Integer, default=0)
    gpu_memory_mb: Mapped[int | None] = mapped_column(Integer)
    driver: Mapped[str] = mapped_column(String(64), default="")
    cuda: Mapped[str] = mapped_column(String(64), default="")
    cublaslt: Mapped[str] = mapped_column(String(64), default="")
    cudnn: Mapped[str] = mapped_column(String(64), default="")
    cpu: Mapped[str] = mapped_column(String(200), default="")
    arch: Mapped[str] = mapped_column(String(32), default="")
    os: Mapped[str] = mapped_column(String(200), default="")
    ram: Mapped[str] = mapped_column(String(64), default="")
    extra: Mapped[dict] = mapped_column(JSON, default=dict)


class Environment(Base):
    __tablename__ = "environments"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    digest: Mapped[str] = mapped_column(String(64), unique=True)
    python: Mapped[str] = mapped_column(String(64), default="")
    torch: Mapped[str] = mapped_column(String(64), default="")
    te_version: Mapped[str] = mapped_column(String(64), default="")
    te_commit: Mapped[str] = mapped_column(String(64), default="")
    extra: Mapped[dict] = mapped_column(JSON, default=dict)


class Commit(Base):
    __tablename__ = "commits"
    __table_args__ = (UniqueConstraint("repo", "sha"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    repo: Mapped[str] = mapped_column(String(200), default="")
    sha: Mapped[str] = mapped_column(String(64), index=True)
    parents: Mapped[list] = mapped_column(JSON, default=list)
    branch: Mapped[str | None] = mapped_column(String(200), index=True)
    committed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    pr_number: Mapped[int | None] = mapped_column(Integer)
    merge_base_sha: Mapped[str | None] = mapped_column(String(64))
    # its place in the git graph sent by `tewatch commits` (CommitGraph), else null: commit order is then
    # committed_at, the results file's date
    ordered_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class CommitGraph(Base):
    """Every commit of a repository's history as a runner's git sent it, benchmarked or not: its parents
    and its place in commit order, a time no earlier than its committer date and later than its parents'."""

    __tablename__ = "commit_graph"
    repo: Mapped[str] = mapped_column(String(200), primary_key=True)
    sha: Mapped[str] = mapped_column(String(64), primary_key=True)
    parents: Mapped[list] = mapped_column(JSON, default=list)
    ordered_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class CommitGraphMissingParent(Base):
    """A parent a stored commit of the graph names that the graph did not hold when it was sent: a graph
    that sends it later is checked for a cycle through it (ingest.commit_graph)."""

    __tablename__ = "commit_graph_missing_parents"
    repo: Mapped[str] = mapped_column(String(200), primary_key=True)
    parent: Mapped[str] = mapped_column(String(64), primary_key=True)
    sha: Mapped[str] = mapped_column(String(64), primary_key=True)


class Benchmark(Base):
    __tablename__ = "benchmarks"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(300), unique=True)
    case_name: Mapped[str] = mapped_column(String(300), index=True)
    param_names: Mapped[list] = mapped_column(JSON, default=list)
    unit: Mapped[str] = mapped_column(String(32), default="seconds")
    type: Mapped[str] = mapped_column(String(32), default="track")
    version: Mapped[str] = mapped_column(String(80), default="")
    higher_is_better: Mapped[bool] = mapped_column(Boolean, default=False)


def _own_group(context: Any) -> str:
    """A case written without a machine group is a group of its own."""
    return context.get_current_parameters()["fingerprint"]


class Case(Base):
    """One class + params on one GPU model/capability and machine. The unit that carries a correctness
    verdict."""

    __tablename__ = "cases"
    __table_args__ = (Index("uq_cases_group_key_machine", "group_key", "machine", unique=True),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    fingerprint: Mapped[str] = mapped_column(String(64), unique=True)
    case_name: Mapped[str] = mapped_column(String(300), index=True)
    params: Mapped[dict] = mapped_column(JSON, default=dict)
    gpu_model: Mapped[str] = mapped_column(String(200), index=True)
    compute_capability: Mapped[str] = mapped_column(String(16), default="")
    backend: Mapped[str | None] = mapped_column(String(32), index=True)
    recipe: Mapped[str | None] = mapped_column(String(64), index=True)
    mode: Mapped[str | None] = mapped_column(String(32))
    rank: Mapped[int | None] = mapped_column(Integer)
    world_size: Mapped[int | None] = mapped_column(Integer)
    labels: Mapped[dict] = mapped_column(JSON, default=dict)
    # asv's environment (e.g. conda-py3.12) where it takes part in the identity; "" for `existing` ones
    environment: Mapped[str] = mapped_column(String(300), default="", server_default="")
    # the case on any machine of its GPU model (fingerprints.case_fingerprint), and the asv machine's name
    group_key: Mapped[str] = mapped_column(String(64), default=_own_group, server_default="")
    machine: Mapped[str] = mapped_column(String(200), default="", server_default="")


class Series(Base):
    """One benchmark method of one case: the unit of history and of change-point detection."""

    __tablename__ = "series"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    fingerprint: Mapped[str] = mapped_column(String(64), unique=True)
    case_id: Mapped[int] = mapped_column(ForeignKey("cases.id"), index=True)
    benchmark_id: Mapped[int] = mapped_column(ForeignKey("benchmarks.id"), index=True)
    case: Mapped[Case] = relationship()
    benchmark: Mapped[Benchmark] = relationship()


class Run(Base):
    __tablename__ = "runs"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    digest: Mapped[str] = mapped_column(String(64), unique=True)
    machine_id: Mapped[int] = mapped_column(ForeignKey("machines.id"), index=True)
    environment_id: Mapped[int] = mapped_column(ForeignKey("environments.id"), index=True)
    commit_id: Mapped[int] = mapped_column(ForeignKey("commits.id"), index=True)
    branch: Mapped[str | None] = mapped_column(String(200), index=True)
    pr_number: Mapped[int | None] = mapped_column(Integer, index=True)
    merge_base_sha: Mapped[str | None] = mapped_column(String(64))
    asv_env_name: Mapped[str] = mapped_column(String(300), default="")
    profile: Mapped[str] = mapped_column(String(32), default="full")
    started_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    uploaded_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, index=True)
    gpu_state: Mapped[dict] = mapped_column(JSON, default=dict)
    # counts by result status and verdict status, written once at ingest so listings need no scan
    summary: Mapped[dict] = mapped_column(JSON, default=dict)
    # A/B rounds (tewatch run --ab): the session both sides share, and which side this run is
    ab_session: Mapped[str | None] = mapped_column(String(64), index=True)
    ab_side: Mapped[str | None] = mapped_column(String(8))
    machine: Mapped[Machine] = relationship()
    environment: Mapped[Environment] = relationship()
    commit: Mapped[Commit] = relationship()


class Result(Base):
    """run_id and series_id carry no foreign key on PostgreSQL (migration 0003 says why); ingest is the
    only writer. Deleting a run must delete its results and verdicts itself."""

    __tablename__ = "results"
    __table_args__ = (
        UniqueConstraint("run_id", "series_id"),
        # what a chart draws of a point, so that a long series reads the index alone
        Index("ix_results_series_points", "series_id", "run_id", "status", "value", "q_25", "q_75"),
    )
    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True)
    run_id: Mapped[int] = mapped_column(Integer)
    series_id: Mapped[int] = mapped_column(Integer)
    status: Mapped[ResultStatus] = mapped_column(_enum(ResultStatus, "result_status"))
    value: Mapped[float | None] = mapped_column(Float)
    samples: Mapped[list | None] = mapped_column(JSON)
    q_25: Mapped[float | None] = mapped_column(Float)
    q_75: Mapped[float | None] = mapped_column(Float)
    ci_99_a: Mapped[float | None] = mapped_column(Float)
    ci_99_b: Mapped[float | None] = mapped_column(Float)
    number: Mapped[int | None] = mapped_column(Integer)
    repeat: Mapped[int | None] = mapped_column(Integer)
    benchmark_version: Mapped[str] = mapped_column(String(80), default="")
    started_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    duration: Mapped[float | None] = mapped_column(Float)
    # samples of each A/B round, in order: `samples` is their concatenation
    round_sizes: Mapped[list | None] = mapped_column(JSON)


class Verdict(Base):
    """Like Result: run_id and case_id carry no foreign key on PostgreSQL."""

    __tablename__ = "verdicts"
    __table_args__ = (
        UniqueConstraint("run_id", "case_id"),
        Index("ix_verdicts_case_points", "case_id", "run_id", "status", "exception_class"),
    )
    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True)
    run_id: Mapped[int] = mapped_column(Integer)
    case_id: Mapped[int] = mapped_column(Integer)
    status: Mapped[VerdictStatus] = mapped_column(_enum(VerdictStatus, "verdict_status"))
    check: Mapped[str] = mapped_column(String(100), default="")
    metric: Mapped[str | None] = mapped_column(String(100))
    metric_value: Mapped[float | None] = mapped_column(Float)
    tolerance: Mapped[float | None] = mapped_column(Float)
    exception_class: Mapped[str | None] = mapped_column(String(200))
    message: Mapped[str | None] = mapped_column(Text)
    traceback_head: Mapped[str | None] = mapped_column(Text)
    reason: Mapped[str | None] = mapped_column(Text)
    extra_checks: Mapped[list] = mapped_column(JSON, default=list)
    gpu_state: Mapped[dict] = mapped_column(JSON, default=dict)


class CaseKernels(Base):
    """A case's kernel table in one run (the `kernels` block of its record, docs/kernels.md): one row per
    case and run, the kernels as a JSON list (docs/kernels.md says why not a row per kernel). Like Result,
    run_id and case_id carry no foreign key; ingest is the only writer."""

    __tablename__ = "case_kernels"
    __table_args__ = (
        UniqueConstraint("run_id", "case_id"),
        Index("ix_case_kernels_case", "case_id", "run_id"),
    )
    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True)
    run_id: Mapped[int] = mapped_column(Integer)
    case_id: Mapped[int] = mapped_column(Integer)
    device: Mapped[str] = mapped_column(String(16))
    profiled_calls: Mapped[int] = mapped_column(Integer)
    launches_per_call: Mapped[float | None] = mapped_column(Float)
    syncs_per_call: Mapped[float | None] = mapped_column(Float)
    copies_per_call: Mapped[float | None] = mapped_column(Float)
    # [{"name", "calls_per_call", "total_seconds", "mean_seconds"}], largest total first
    kernels: Mapped[list] = mapped_column(JSON, default=list)


class Trajectory(Base):
    """A training case's loss and gradient norm at every optimizer step of one run, kept whole (read and
    judged as one curve, never as a series per step). Like Verdict: no foreign keys on PostgreSQL."""

    __tablename__ = "trajectories"
    __table_args__ = (UniqueConstraint("case_id", "run_id"),)
    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True)
    run_id: Mapped[int] = mapped_column(Integer, index=True)
    case_id: Mapped[int] = mapped_column(Integer)
    steps: Mapped[int] = mapped_column(Integer)
    seed: Mapped[int | None] = mapped_column(BigInteger)
    micro_batches: Mapped[int | None] = mapped_column(Integer)
    tokens_per_step: Mapped[int | None] = mapped_column(Integer)
    resumed_from_step: Mapped[int | None] = mapped_column(Integer)
    loss: Mapped[list] = mapped_column(JSON)  # a float per step, None where it was NaN or infinite
    grad_norm: Mapped[list] = mapped_column(JSON)


class LatestVerdict(Base):
    """The verdict of the newest run of every case in commit order (commit date, run start, run id; the
    first two kept here), kept by ingest in its transaction.

    Derived rows, rewritten for every case on every upload: run_id and verdict_id carry no foreign key,
    whose per-row checks would cost PostgreSQL more than the update itself. Ingest writes them from the
    verdicts it has just inserted in the same transaction (tewatch.ingest.latest)."""

    __tablename__ = "latest_verdicts"
    case_id: Mapped[int] = mapped_column(ForeignKey("cases.id"), primary_key=True)
    run_id: Mapped[int] = mapped_column(Integer)
    verdict_id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"))
    committed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    started_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class LatestBranchVerdict(Base):
    """Like LatestVerdict, per branch (runs without a branch have no row here)."""

    __tablename__ = "latest_branch_verdicts"
    # branch first: the primary key is also the index that reads one branch
    branch: Mapped[str] = mapped_column(String(200), primary_key=True)
    case_id: Mapped[int] = mapped_column(ForeignKey("cases.id"), primary_key=True)
    run_id: Mapped[int] = mapped_column(Integer)
    verdict_id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"))
    committed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    started_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class RawFile(Base):
    """Every uploaded file, content-addressed, so a later parser can re-read every past upload.

    The case records of an upload are one raw file, a case archive (tewatch.store.schema.case_archive)."""

    __tablename__ = "raw_files"
    digest: Mapped[str] = mapped_column(String(64), primary_key=True)
    size: Mapped[int] = mapped_column(Integer)
    content: Mapped[bytes] = mapped_column(LargeBinary)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class RunFile(Base):
    __tablename__ = "run_files"
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True)
    role: Mapped[str] = mapped_column(String(300), primary_key=True)
    digest: Mapped[str] = mapped_column(ForeignKey("raw_files.digest"))


class TokenScope(str, enum.Enum):
    """What a token may do beyond reading (tewatch.store.writes.tokens says which routes each scope opens)."""

    upload = "upload"  # a GPU runner: uploads, detection after them, the commit graph
    triage = "triage"  # a person on call: alert status changes
    admin = "admin"  # all of the above, and webhook subscriptions with their delivery log


class ApiToken(Base):
    __tablename__ = "api_tokens"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(200), default="")
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    scope: Mapped[TokenScope] = mapped_column(_enum(TokenScope, "token_scope"))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))

"""The API's reads as plain dicts; machines, latest verdicts and series points through the read modules
the pages share (machine_reads, case_reads, series_reads). Runs are run_reads' typed rows, which the API
turns into its answers itself (tewatch.api.schemas.RunSummary.of)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from sqlalchemy import Connection, Select, and_, func, select
from sqlalchemy.orm import aliased

from tewatch.store.engine.gc_pause import collector_paused
from tewatch.store.reads.case_reads import CaseSelection, latest_case_verdicts, verdict_rows
from tewatch.store.reads.commit_order import commit_place
from tewatch.store.reads.machine_reads import machines
from tewatch.store.reads.series_reads import MAX_SAMPLES_PER_POINT, detailed_points, one_series
from tewatch.store.schema import case_archive
from tewatch.store.schema.models import (
    Benchmark,
    Case,
    Commit,
    Machine,
    RawFile,
    Result,
    Run,
    RunFile,
    Series,
    Verdict,
)

CASE_COLUMNS = (
    Case.case_name,
    Case.params,
    Case.gpu_model,
    Case.compute_capability,
    Case.backend,
    Case.recipe,
    Case.mode,
    Case.rank,
    Case.world_size,
    Case.labels,
    Case.environment,
    Case.machine,
    Case.group_key,
)
VERDICT_COLUMNS = (
    Verdict.status,
    Verdict.check,
    Verdict.metric,
    Verdict.metric_value,
    Verdict.tolerance,
    Verdict.exception_class,
    Verdict.message,
    Verdict.traceback_head,
    Verdict.reason,
    Verdict.extra_checks,
)


@dataclass
class Page:
    items: list[dict[str, Any]]
    total: int
    limit: int
    offset: int


def _rows(conn: Connection, statement: Select) -> list[dict[str, Any]]:
    result = conn.execute(statement)
    keys = list(result.keys())
    return [dict(zip(keys, row, strict=True)) for row in result.all()]


def _page(conn: Connection, statement: Select, limit: int, offset: int) -> Page:
    total = conn.execute(select(func.count()).select_from(statement.order_by(None).subquery())).scalar_one()
    return Page(_rows(conn, statement.limit(limit).offset(offset)), total, limit, offset)


def _enum_value(value: Any) -> Any:
    return getattr(value, "value", value)


def run_exists(conn: Connection, run_id: int) -> bool:
    return conn.execute(select(Run.id).where(Run.id == run_id)).first() is not None


def run_files(conn: Connection, run_id: int) -> list[dict[str, Any]]:
    """Every file of the upload, case records one by one (`cases/<name>`) as they were uploaded."""
    files = []
    for role, digest in conn.execute(select(RunFile.role, RunFile.digest).where(RunFile.run_id == run_id)):
        if role != case_archive.ROLE:
            files.append({"role": role, "digest": digest})
            continue
        archive = conn.execute(select(RawFile.content).where(RawFile.digest == digest)).scalar_one()
        files += [{"role": r, "digest": d} for r, d in case_archive.member_digests(bytes(archive))]
    return sorted(files, key=lambda f: f["role"])


def list_commits(
    conn: Connection, *, repo: str | None = None, branch: str | None = None, limit: int = 100, offset: int = 0
) -> Page:
    runs = select(Run.commit_id, func.count(Run.id).label("runs")).group_by(Run.commit_id).subquery()
    statement = (
        select(*Commit.__table__.columns, func.coalesce(runs.c.runs, 0).label("runs"))
        .outerjoin(runs, runs.c.commit_id == Commit.id)
        .order_by(commit_place().desc(), Commit.id.desc())
    )
    if repo is not None:
        statement = statement.where(Commit.repo == repo)
    if branch is not None:
        statement = statement.where(Commit.branch == branch)
    return _page(conn, statement, limit, offset)


def list_benchmarks(conn: Connection, *, case_name: str | None = None) -> list[dict[str, Any]]:
    statement = select(*Benchmark.__table__.columns).order_by(Benchmark.name)
    if case_name is not None:
        statement = statement.where(Benchmark.case_name == case_name)
    return _rows(conn, statement)


def list_machines(conn: Connection) -> list[dict[str, Any]]:
    """Every machine, by id (machine_reads.machines, as the machines page reads them)."""
    return [asdict(m) for m in machines(conn)]


def list_cases(
    conn: Connection,
    *,
    case_name: str | None = None,
    gpu: str | None = None,
    machine: str | None = None,
    group_key: str | None = None,
    backend: str | None = None,
    recipe: str | None = None,
    limit: int = 500,
    offset: int = 0,
) -> Page:
    statement = select(Case.id, *CASE_COLUMNS).order_by(Case.case_name, Case.id)
    statement = _case_filters(
        statement,
        case_name=case_name,
        gpu=gpu,
        machine=machine,
        group_key=group_key,
        backend=backend,
        recipe=recipe,
    )
    page = _page(conn, statement, limit, offset)
    ids = [item["id"] for item in page.items]
    series: dict[int, list[dict[str, Any]]] = {}
    for start in range(0, len(ids), 500):
        for row in conn.execute(
            select(Series.case_id, Series.id, Benchmark.name, Benchmark.unit)
            .join(Benchmark, Benchmark.id == Series.benchmark_id)
            .where(Series.case_id.in_(ids[start : start + 500]))
            .order_by(Benchmark.name)
        ):
            series.setdefault(row.case_id, []).append({"id": row.id, "benchmark": row.name, "unit": row.unit})
    for item in page.items:
        item["series"] = series.get(item["id"], [])
    return page


def _case_filters(statement: Select, **filters: str | None) -> Select:
    columns = {
        "case_name": Case.case_name,
        "gpu": Case.gpu_model,
        "machine": Case.machine,
        "group_key": Case.group_key,
        "backend": Case.backend,
        "recipe": Case.recipe,
    }
    for name, value in filters.items():
        if value is not None:
            statement = statement.where(columns[name] == value)
    return statement


def get_series(
    conn: Connection,
    series_id: int,
    *,
    branch: str | None = None,
    pr: int | None = None,
    limit: int = 1000,
    offset: int = 0,
    max_points: int | None = None,
    with_samples: bool = True,
    samples_per_point: int = MAX_SAMPLES_PER_POINT,
) -> dict[str, Any] | None:
    """The series and a page of its points in commit order, as the pages read them
    (series_reads.detailed_points: the newest `limit` after the newest `offset`, fewer where their samples
    would pass the answer's budget; `next_offset` continues): its history outside pull requests,
    `branch`'s runs, or pull request `pr`'s."""
    header = conn.execute(
        one_series(
            series_id,
            Series.id,
            Series.fingerprint,
            Series.case_id,
            Benchmark.name.label("benchmark"),
            Benchmark.unit,
            Benchmark.type,
            Benchmark.higher_is_better,
            *CASE_COLUMNS,
        )
    ).first()
    if header is None:
        return None
    series = dict(header._mapping)
    page = detailed_points(
        conn,
        series_id,
        series["case_id"],
        branch,
        last=limit,
        with_samples=with_samples,
        pr=pr,
        skip=offset,
        samples_per_point=samples_per_point,
    )
    points = [dict(vars(p)) for p in page.points]  # asdict would copy every list of samples
    series["total_points"] = len(points)
    series["next_offset"] = page.next_offset
    series["points"] = downsample(points, max_points) if max_points else points
    return series


def run_results(
    conn: Connection, run_id: int, *, limit: int = 1000, offset: int = 0, with_samples: bool = True
) -> Page:
    """Every result of one run with its case's labels, its samples and its case's verdict and GPU state
    (clocks, power, temperature, throttle reasons around the case), in benchmark and case order."""
    columns = [
        Result.series_id,
        Series.case_id,
        Benchmark.name.label("benchmark"),
        Benchmark.unit,
        *CASE_COLUMNS,
        Result.status,
        Result.value,
        Result.q_25,
        Result.q_75,
        Result.number,
        Result.repeat,
        Result.benchmark_version,
        Result.started_at,
        Verdict.status.label("verdict"),
        Verdict.exception_class,
        Verdict.gpu_state,
    ]
    if with_samples:
        columns.append(Result.samples)
    statement = (
        select(*columns)
        .select_from(Result)
        .join(Series, Series.id == Result.series_id)
        .join(Benchmark, Benchmark.id == Series.benchmark_id)
        .join(Case, Case.id == Series.case_id)
        .outerjoin(Verdict, and_(Verdict.run_id == Result.run_id, Verdict.case_id == Series.case_id))
        .where(Result.run_id == run_id)
        .order_by(Benchmark.name, Series.case_id, Result.series_id)
    )
    page = _page(conn, statement, limit, offset)
    for row in page.items:
        row["status"] = _enum_value(row["status"])
        row["verdict"] = _enum_value(row["verdict"])
        row["gpu_state"] = row["gpu_state"] or {}
    return page


def downsample(points: list[dict[str, Any]], max_points: int) -> list[dict[str, Any]]:
    """Keep every k-th point, plus every point whose status or verdict is not ok/pass, plus the last."""
    if len(points) <= max_points or max_points < 2:
        return points
    step = len(points) / (max_points - 1)
    keep = {round(i * step) for i in range(max_points - 1)} | {len(points) - 1}
    keep |= {i for i, p in enumerate(points) if p["status"] != "ok" or p["verdict"] not in (None, "pass")}
    return [points[i] for i in sorted(keep) if i < len(points)]


def latest_verdicts(
    conn: Connection,
    *,
    gpu: str | None = None,
    backend: str | None = None,
    recipe: str | None = None,
    case_name: str | None = None,
    branch: str | None = None,
    status: str | None = None,
) -> list[dict[str, Any]]:
    """The verdict of every case at its newest commit (commit date, run start, run id), on one branch or,
    with none given, outside pull requests: what the overview shows (case_reads.latest_case_verdicts), by
    case name and id; cases without one left out."""
    selection = CaseSelection(gpu=gpu, recipe=recipe, backend=backend, case_name=case_name)
    heads = [h for h in latest_case_verdicts(conn, selection, branch, by_name=True) if h.verdict is not None]
    if status is not None:
        heads = [h for h in heads if h.verdict is not None and h.verdict.status.value == status]
    verdicts = verdict_rows(conn, [h.verdict.id for h in heads if h.verdict is not None])
    out = []
    with collector_paused():
        for head in heads:
            case, verdict = head.case, verdicts[head.verdict.id]  # type: ignore[union-attr]
            out.append(
                {
                    "case_id": case.id,
                    **{c.key: getattr(case, c.key) for c in CASE_COLUMNS},
                    "run_id": verdict.run_id,
                    **{c.key: getattr(verdict, c.key) for c in VERDICT_COLUMNS},
                    "commit_sha": verdict.commit_sha,
                    "branch": verdict.branch,
                    "uploaded_at": verdict.uploaded_at,
                }
            )
    return out


def compare_runs(conn: Connection, base_run_id: int, head_run_id: int) -> list[dict[str, Any]]:
    base, head = aliased(Result), aliased(Result)
    base_verdict, head_verdict = aliased(Verdict), aliased(Verdict)
    statement = (
        select(
            Series.id.label("series_id"),
            Benchmark.name.label("benchmark"),
            Benchmark.unit,
            Benchmark.higher_is_better,
            *CASE_COLUMNS,
            base.status.label("base_status"),
            base.value.label("base_value"),
            head.status.label("head_status"),
            head.value.label("head_value"),
            base_verdict.status.label("base_verdict"),
            head_verdict.status.label("head_verdict"),
        )
        .select_from(Series)
        .join(Benchmark, Benchmark.id == Series.benchmark_id)
        .join(Case, Case.id == Series.case_id)
        .outerjoin(base, and_(base.series_id == Series.id, base.run_id == base_run_id))
        .outerjoin(head, and_(head.series_id == Series.id, head.run_id == head_run_id))
        .outerjoin(base_verdict, and_(base_verdict.case_id == Case.id, base_verdict.run_id == base_run_id))
        .outerjoin(head_verdict, and_(head_verdict.case_id == Case.id, head_verdict.run_id == head_run_id))
        .where(Series.id.in_(select(Result.series_id).where(Result.run_id.in_([base_run_id, head_run_id]))))
        .order_by(Benchmark.name, Case.id)
    )
    rows = _rows(conn, statement)
    for row in rows:
        for key in ("base_status", "head_status", "base_verdict", "head_verdict"):
            row[key] = _enum_value(row[key])
        base_value, head_value = row["base_value"], row["head_value"]
        row["ratio"] = head_value / base_value if base_value and head_value is not None else None
        row["change"] = _change(row)
    return rows


def _change(row: dict[str, Any]) -> str:
    """What happened between base and head, in words the dashboard can colour."""
    if row["base_status"] is None:
        return "new"
    if row["head_status"] is None:
        return "gone"
    if row["base_status"] == "ok" and row["head_status"] != "ok":
        return "broke"
    if row["base_status"] != "ok" and row["head_status"] == "ok":
        return "fixed"
    if row["ratio"] is None:
        return "unchanged"
    better = (row["ratio"] > 1) == bool(row["higher_is_better"])
    return "same" if row["ratio"] == 1 else ("better" if better else "worse")


def store_counts(conn: Connection) -> dict[str, int]:
    tables = {
        "runs": Run,
        "results": Result,
        "verdicts": Verdict,
        "cases": Case,
        "series": Series,
        "benchmarks": Benchmark,
        "commits": Commit,
        "machines": Machine,
    }
    return {
        name: conn.execute(select(func.count()).select_from(model)).scalar_one()
        for name, model in tables.items()
    }

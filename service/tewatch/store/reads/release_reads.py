"""TE releases along a branch on one machine, as typed rows: which runs measured which release (in commit
order), each release's step from the one before (the comparer's stored verdicts per series, the cases that
began or stopped failing), the release each run measured, and the run where a case's failure began."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import pairwise

from sqlalchemy import Connection, Select, func, or_, select, true, tuple_
from sqlalchemy.orm import aliased

from tewatch.core.statuses import FAILING_STATUSES
from tewatch.core.te_releases import is_release, is_version_stand_in
from tewatch.store.reads.case_reads import branch_clause
from tewatch.store.reads.commit_order import commit_order_columns, newest_commit_first, oldest_commit_first
from tewatch.store.reads.key_lists import in_key_list
from tewatch.store.schema.alert_models import ReleaseComparison
from tewatch.store.schema.models import (
    Benchmark,
    Case,
    Commit,
    Environment,
    Machine,
    Run,
    Series,
    Verdict,
    VerdictStatus,
)

CHANGES = ("regression", "improvement")
CASE_RUNS = 5  # runs read a side for the cases that began or stopped failing


@dataclass(frozen=True)
class ReleaseRuns:
    version: str
    run_ids: list[int]  # in commit order


def releases_on(conn: Connection, branch: str, machine_id: int) -> list[ReleaseRuns]:
    """The releases measured on `branch` (pull requests aside) on one machine, in the commit order of each
    release's first run, with their runs."""
    found: dict[str, list[int]] = {}
    statement = (
        select(Run.id, Environment.te_version)
        .join(Commit, Commit.id == Run.commit_id)
        .join(Environment, Environment.id == Run.environment_id)
        .where(Run.branch == branch, Run.machine_id == machine_id, Run.pr_number.is_(None))
        .order_by(*oldest_commit_first(Run.id))
    )
    for run_id, version in conn.execute(statement):
        if is_release(version):
            found.setdefault(version, []).append(run_id)
    return [ReleaseRuns(version, runs) for version, runs in found.items()]


@dataclass(frozen=True)
class RunRelease:
    """What a run measured: TE's version ("" where it recorded none) and the commit it is filed under."""

    run_id: int
    te_version: str
    sha: str

    @property
    def stand_in(self) -> bool:
        """The sha is the hash of the version that `tewatch run` files a wheel without a commit under."""
        return is_version_stand_in(self.sha, self.te_version)


def run_releases(conn: Connection, run_ids: Sequence[int | None]) -> dict[int, RunRelease]:
    wanted = sorted({i for i in run_ids if i is not None})
    if not wanted:
        return {}
    rows = conn.execute(
        select(Run.id, Environment.te_version, Commit.sha)
        .join(Environment, Environment.id == Run.environment_id)
        .join(Commit, Commit.id == Run.commit_id)
        .where(in_key_list(conn, Run.id, wanted, "run_ids"))
    )
    return {run_id: RunRelease(run_id, version or "", sha) for run_id, version, sha in rows}


@dataclass(frozen=True)
class StepComparison:
    """One series' verdict in one release step: the release's first run holding the series against the
    runs of the release before."""

    series_id: int
    case_id: int
    case_name: str
    params: dict
    benchmark: str
    unit: str
    verdict: str
    baseline: float | None
    head: float | None
    effect: float | None
    ci_low: float | None
    ci_high: float | None
    q_value: float | None
    n_base: int
    n_head: int
    min_effect: float
    head_run_id: int
    base_run_ids: list[int]


@dataclass(frozen=True)
class CaseChange:
    """A case whose verdict left `pass`, or came back to it, from one release to the next."""

    case_id: int
    case_name: str
    params: dict
    before: str
    after: str
    detail: str  # what failed: the exception and its message, or the check and its metric
    run_id: int  # the release's run that says `after`


@dataclass
class ReleaseStep:
    branch: str
    machine_id: int
    machine: str
    gpu_model: str
    base_version: str
    head_version: str
    base_run_ids: list[int]
    head_run_ids: list[int]
    comparisons: list[StepComparison] = field(default_factory=list)  # one per series
    new_failures: list[CaseChange] = field(default_factory=list)
    fixes: list[CaseChange] = field(default_factory=list)

    @property
    def counts(self) -> Counter[str]:
        return Counter(c.verdict for c in self.comparisons)

    def changed(self, verdict: str) -> list[StepComparison]:
        """The series of one verdict, largest change first."""
        found = [c for c in self.comparisons if c.verdict == verdict]
        return sorted(found, key=lambda c: -abs(c.effect or 0.0))


def release_places(conn: Connection, branch: str = "") -> list[tuple[str, int, str, str]]:
    """(branch, machine id, machine name, GPU model) of every branch and machine with a TE version."""
    statement = (
        select(Run.branch, Run.machine_id, Machine.name, Machine.gpu_model)
        .join(Machine, Machine.id == Run.machine_id)
        .join(Environment, Environment.id == Run.environment_id)
        .where(Run.pr_number.is_(None), Run.branch.is_not(None), Environment.te_version != "")
        .distinct()
    )
    if branch:
        statement = statement.where(Run.branch == branch)
    places = [
        (found or "", machine_id, name, gpu) for found, machine_id, name, gpu in conn.execute(statement)
    ]
    return sorted(places, key=lambda p: (p[0], p[3], p[2], p[1]))


def step_outlines(conn: Connection, branch: str = "") -> list[ReleaseStep]:
    """Every release step (of `branch` where one is given), newest release first per branch and machine;
    their runs only, nothing of what changed."""
    steps = []
    for place_branch, machine_id, machine, gpu_model in release_places(conn, branch):
        releases = releases_on(conn, place_branch, machine_id)
        for base, head in reversed(list(pairwise(releases))):
            steps.append(
                ReleaseStep(
                    place_branch,
                    machine_id,
                    machine,
                    gpu_model,
                    base.version,
                    head.version,
                    base.run_ids,
                    head.run_ids,
                )
            )
    return steps


_COMPARISON_COLUMNS = (
    ReleaseComparison.series_id,
    Series.case_id,
    Case.case_name,
    Case.params,
    Benchmark.name,
    Benchmark.unit,
    ReleaseComparison.verdict,
    ReleaseComparison.baseline,
    ReleaseComparison.head,
    ReleaseComparison.effect,
    ReleaseComparison.ci_low,
    ReleaseComparison.ci_high,
    ReleaseComparison.q_value,
    ReleaseComparison.n_base,
    ReleaseComparison.n_head,
    ReleaseComparison.min_effect,
    ReleaseComparison.head_run_id,
    ReleaseComparison.base_run_ids,
)
_STEP_KEY = (ReleaseComparison.branch, ReleaseComparison.machine_id, ReleaseComparison.head_version)


def _comparisons(statement: Select) -> Select:
    return (
        statement.join(Series, Series.id == ReleaseComparison.series_id)
        .join(Case, Case.id == Series.case_id)
        .join(Benchmark, Benchmark.id == Series.benchmark_id)
    )


def _comparison(values: Sequence) -> StepComparison:
    fields = dict(zip((c.key for c in _COMPARISON_COLUMNS), values, strict=True))
    return StepComparison(
        series_id=fields["series_id"],
        case_id=fields["case_id"],
        case_name=fields["case_name"],
        params=fields["params"] or {},
        benchmark=fields["name"],
        unit=fields["unit"],
        verdict=fields["verdict"],
        baseline=fields["baseline"],
        head=fields["head"],
        effect=fields["effect"],
        ci_low=fields["ci_low"],
        ci_high=fields["ci_high"],
        q_value=fields["q_value"],
        n_base=fields["n_base"],
        n_head=fields["n_head"],
        min_effect=fields["min_effect"],
        head_run_id=fields["head_run_id"],
        base_run_ids=list(fields["base_run_ids"] or []),
    )


def _first_per_series(found: list[StepComparison], head_run_ids: list[int]) -> list[StepComparison]:
    """Of the comparisons of a step's runs, each series' from the release's first run that holds it."""
    place = {run_id: i for i, run_id in enumerate(head_run_ids)}
    first: dict[int, StepComparison] = {}
    for c in sorted(found, key=lambda c: place.get(c.head_run_id, len(place))):
        first.setdefault(c.series_id, c)
    return list(first.values())


def fill_comparisons(conn: Connection, steps: list[ReleaseStep], verdicts: Sequence[str] = ()) -> None:
    """Each step's comparisons (only those of `verdicts` where given)."""
    for step in steps:
        statement = _comparisons(select(*_COMPARISON_COLUMNS)).where(
            *(column == value for column, value in zip(_STEP_KEY, _step_key(step), strict=True))
        )
        if verdicts:
            statement = statement.where(ReleaseComparison.verdict.in_(list(verdicts)))
        found = [_comparison(row) for row in conn.execute(statement)]
        step.comparisons = _first_per_series(found, step.head_run_ids)


def _step_key(step: ReleaseStep) -> tuple[str, int, str]:
    return (step.branch, step.machine_id, step.head_version)


def _failure_detail(row) -> str:
    if row.exception_class or row.message:
        return " ".join(part for part in (row.exception_class, row.message) if part)
    metric = f" {row.metric} = {row.metric_value:.3g}" if row.metric and row.metric_value is not None else ""
    return f"{row.check}{metric}".strip()


def fill_case_changes(conn: Connection, steps: list[ReleaseStep]) -> None:
    """Each step's cases that began failing and that pass again: a case's last verdict among the earlier
    release's newest runs against its first among the release's first runs. Statuses are read for every
    case, names and what failed only for the cases that changed."""
    for step in steps:
        sides = step.base_run_ids[-CASE_RUNS:] + step.head_run_ids[:CASE_RUNS]
        order = {run_id: i for i, run_id in enumerate(sides)}
        head_runs = set(step.head_run_ids)
        before: dict[int, tuple[str, int]] = {}  # case id -> (status, verdict id)
        after: dict[int, tuple[str, int]] = {}
        rows = conn.execute(
            select(Verdict.run_id, Verdict.case_id, Verdict.status, Verdict.id).where(
                in_key_list(conn, Verdict.run_id, sides, "run_ids")
            )
        ).all()
        for run_id, case_id, verdict_status, verdict_id in sorted(rows, key=lambda r: order[r[0]]):
            if run_id in head_runs:
                after.setdefault(case_id, (verdict_status.value, verdict_id))
            else:
                before[case_id] = (verdict_status.value, verdict_id)
        changed = []  # (began failing, status before, status after, verdict that failed, verdict after)
        for case_id, (status, now_id) in after.items():
            was, was_id = before.get(case_id, ("", 0))
            if status in FAILING_STATUSES and was and was not in FAILING_STATUSES:
                changed.append((True, was, status, now_id, now_id))
            elif status == "pass" and was in FAILING_STATUSES:
                changed.append((False, was, status, was_id, now_id))
        details = _verdict_details(
            conn, [failing for *_, failing, _ in changed] + [now for *_, now in changed]
        )
        for began, was, status, failing, now in changed:
            case_id, case_name, params, run_id, _ = details[now]
            change = CaseChange(case_id, case_name, params, was, status, details[failing][4], run_id)
            (step.new_failures if began else step.fixes).append(change)
        step.new_failures.sort(key=lambda c: (c.case_name, str(sorted(c.params.items()))))
        step.fixes.sort(key=lambda c: (c.case_name, str(sorted(c.params.items()))))


def _verdict_details(conn: Connection, verdict_ids: list[int]) -> dict[int, tuple[int, str, dict, int, str]]:
    """Verdict id -> (case id, case name, params, run id, what failed)."""
    if not verdict_ids:
        return {}
    rows = conn.execute(
        select(
            Verdict.id,
            Verdict.case_id,
            Case.case_name,
            Case.params,
            Verdict.run_id,
            Verdict.check,
            Verdict.metric,
            Verdict.metric_value,
            Verdict.exception_class,
            Verdict.message,
        )
        .join(Case, Case.id == Verdict.case_id)
        .where(in_key_list(conn, Verdict.id, sorted(set(verdict_ids)), "verdict_ids"))
    )
    return {
        row.id: (row.case_id, row.case_name, row.params or {}, row.run_id, _failure_detail(row))
        for row in rows
    }


def release_steps(conn: Connection, branch: str = "") -> list[ReleaseStep]:
    """Every release step in full: what the comparer said of each series, and the cases that began or
    stopped failing."""
    steps = step_outlines(conn, branch)
    fill_comparisons(conn, steps)
    fill_case_changes(conn, steps)
    return steps


@dataclass(frozen=True)
class SeriesStep:
    """A series' verdict in one release step."""

    branch: str
    machine: str
    base_version: str
    head_version: str
    comparison: StepComparison


def series_steps(conn: Connection, series_ids: Sequence[int]) -> list[SeriesStep]:
    """The release steps of these series, each series' newest step first."""
    if not series_ids:
        return []
    statement = (
        _comparisons(
            select(
                *_COMPARISON_COLUMNS,
                ReleaseComparison.branch,
                Machine.name,
                ReleaseComparison.base_version,
                ReleaseComparison.head_version,
            )
        )
        .join(Machine, Machine.id == ReleaseComparison.machine_id)
        .join(Run, Run.id == ReleaseComparison.head_run_id)
        .join(Commit, Commit.id == Run.commit_id)
        .where(in_key_list(conn, ReleaseComparison.series_id, list(series_ids), "series_ids"))
        .order_by(Benchmark.name, *newest_commit_first(Run.id))
    )
    n = len(_COMPARISON_COLUMNS)
    steps: dict[tuple, SeriesStep] = {}
    for row in conn.execute(statement):
        comparison = _comparison(row[:n])
        branch, machine, base_version, head_version = row[n:]
        # the newest runs come first: the release's first run holding the series is the last one seen
        steps[(comparison.series_id, branch, machine, head_version)] = SeriesStep(
            branch, machine, base_version, head_version, comparison
        )
    return list(steps.values())


@dataclass(frozen=True)
class ReleaseSignal:
    kind: str  # "regression" | "improvement"
    effect: float | None
    base_version: str
    head_version: str
    series_id: int


def release_signals(conn: Connection, case_ids: Sequence[int], branch: str = "") -> dict[int, ReleaseSignal]:
    """Per case, what the newest release step of its branch and machine changed: a regression where any of
    its series regressed (the largest), else an improvement."""
    wanted = set(case_ids)
    if not wanted:
        return {}
    newest: dict[tuple[str, int], ReleaseStep] = {}
    for step in step_outlines(conn, branch):
        newest.setdefault((step.branch, step.machine_id), step)
    steps = list(newest.values())
    fill_comparisons(conn, steps, CHANGES)
    signals: dict[int, ReleaseSignal] = {}
    for step in steps:
        for c in sorted(step.comparisons, key=lambda c: (c.verdict != "regression", -abs(c.effect or 0.0))):
            if c.case_id in wanted and c.case_id not in signals:
                signals[c.case_id] = ReleaseSignal(
                    c.verdict, c.effect, step.base_version, step.head_version, c.series_id
                )
    return signals


def failing_since(
    conn: Connection, case_ids: Sequence[int], branch: str = "", at_run: int | None = None
) -> dict[int, RunRelease]:
    """Per case whose newest verdict (on `branch`; else outside pull requests), or whose verdict in run
    `at_run`, fails: the first run of the failures that lead up to it, where the failure began. The database
    finds it (the oldest failing verdict after the case's last pass), so only one row per case comes back."""
    if not case_ids:
        return {}
    history = _verdict_history(conn, case_ids, branch, at_run)
    newest_pass = (
        select(
            history.c.case_id,
            *_order_key(history),
            func.row_number()
            .over(partition_by=history.c.case_id, order_by=[c.desc() for c in _order_key(history)])
            .label("rank"),
        )
        .where(history.c.status.not_in(_FAILING))
        .subquery()
    )
    last_pass = select(newest_pass).where(newest_pass.c.rank == 1).subquery()
    failing_after = (
        select(
            history.c.case_id,
            history.c.run_id,
            history.c.te_version,
            history.c.sha,
            func.row_number()
            .over(partition_by=history.c.case_id, order_by=_order_key(history))
            .label("rank"),
        )
        .select_from(history.outerjoin(last_pass, last_pass.c.case_id == history.c.case_id))
        .where(
            history.c.status.in_(_FAILING),
            or_(last_pass.c.case_id.is_(None), tuple_(*_order_key(history)) > tuple_(*_order_key(last_pass))),
        )
        .subquery()
    )
    first_failures = select(
        failing_after.c.case_id, failing_after.c.run_id, failing_after.c.te_version, failing_after.c.sha
    ).where(failing_after.c.rank == 1)
    return {
        case_id: RunRelease(run_id, version or "", sha)
        for case_id, run_id, version, sha in conn.execute(first_failures)
    }


_FAILING = [VerdictStatus(s) for s in FAILING_STATUSES]


def _order_key(table) -> tuple:
    return table.c.place, table.c.started, table.c.run_id


def _verdict_history(conn: Connection, case_ids: Sequence[int], branch: str, at_run: int | None):
    """The cases' verdicts on the branch with their commit order; with `at_run`, those up to that run of
    the cases it holds."""
    place, started = commit_order_columns()
    statement = (
        select(
            Verdict.case_id,
            Verdict.status,
            Run.id.label("run_id"),
            Environment.te_version,
            Commit.sha,
            place.label("place"),
            started.label("started"),
        )
        .join(Run, Run.id == Verdict.run_id)
        .join(Commit, Commit.id == Run.commit_id)
        .join(Environment, Environment.id == Run.environment_id)
        .where(in_key_list(conn, Verdict.case_id, list(case_ids), "case_ids"), branch_clause(branch or None))
    )
    if at_run is not None:
        cut = (
            select(place.label("place"), started.label("started"), Run.id.label("run_id"))
            .join(Commit, Commit.id == Run.commit_id)
            .where(Run.id == at_run)
            .subquery()
        )
        in_run = aliased(Verdict)
        statement = statement.join(cut, true()).where(
            tuple_(place, started, Run.id) <= tuple_(*_order_key(cut)),
            Verdict.case_id.in_(select(in_run.case_id).where(in_run.run_id == at_run)),
        )
    # PostgreSQL reads the history once for both of its uses as a CTE; SQLite plans each use better inline
    if conn.dialect.name == "postgresql":
        return statement.cte("history")
    return statement.subquery("history")

"""A pull request's head run as a `PrReport` (tewatch.findings.pr_report): built by detection from the
comparisons it has just made, and read back for the page from the comparisons it stored, through the
same steps, so the page and the report say the same."""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from dataclasses import dataclass, replace

from sqlalchemy import select
from sqlalchemy.orm import Session

from tewatch.detect.config import CompareConfig
from tewatch.detect.flips import is_new_failure
from tewatch.findings.pr_report import (
    CaseFailure,
    CaseFixed,
    MemoryChange,
    NumericsChange,
    PrReport,
    TimingChange,
    TrainingCase,
)
from tewatch.pipeline.correctness import (
    FAILING,
    FixedCase,
    fixed_cases,
    fixed_findings,
    previous_verdicts,
)
from tewatch.pipeline.history import SeriesInfo, series_infos
from tewatch.pipeline.kernels import ChangedTiming, KernelEvidence, kernel_evidence, kernel_findings
from tewatch.pipeline.labels import case_label, verdict_detail
from tewatch.pipeline.memory_numerics import memory_and_numerics
from tewatch.pipeline.merge_base import merge_base_runs
from tewatch.pipeline.training import training_cases
from tewatch.store.reads.run_reads import run_verdicts
from tewatch.store.schema.alert_models import PrComparison
from tewatch.store.schema.models import Run, VerdictStatus

REGRESSION, IMPROVEMENT, SUSPECT = "regression", "improvement", "suspect"


def _number(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


@dataclass(frozen=True)
class SeriesFinding:
    """One series' comparison as the report reads it; `primary`: the steadier timing of its case."""

    info: SeriesInfo
    verdict: str
    timing: TimingChange
    primary: bool

    @classmethod
    def of(
        cls, series_id: int, info: SeriesInfo, verdict: str, found: object, primary: bool
    ) -> SeriesFinding:
        """`found`: what a comparison says of the series, detect's Comparison as made or a PrComparison row
        as stored (baseline, head, effect and its interval)."""
        values = {
            name: _number(getattr(found, name))
            for name in ("baseline", "head", "effect", "ci_low", "ci_high")
        }
        timing = TimingChange(benchmark=info.label, unit=info.unit, series_id=series_id, **values)
        return cls(info, verdict, timing, primary)


def case_verdicts(series: list[SeriesFinding]) -> dict[int, str]:
    """Case id -> its verdict: a regression, else a suspect speed-up, else an improvement when any of its
    series is one, else its primary series' verdict (unchanged, unstable or inconclusive)."""
    by_case: dict[int, list[tuple[bool, str]]] = defaultdict(list)
    for found in series:
        if found.info.case_id is not None:
            by_case[found.info.case_id].append((found.primary, found.verdict))
    verdicts = {}
    for case_id, rows in by_case.items():
        seen = {v for _, v in rows}
        changed = next((v for v in (REGRESSION, SUSPECT, IMPROVEMENT) if v in seen), None)
        if changed:
            verdicts[case_id] = changed
        else:
            main = [v for is_primary, v in rows if is_primary] or [v for _, v in rows]
            verdicts[case_id] = main[0]
    return verdicts


def _largest_first(series: list[SeriesFinding], verdict: str, taken: set[int]) -> list[TimingChange]:
    found = [s.timing for s in series if s.verdict == verdict and s.timing.series_id not in taken]
    return sorted(found, key=lambda t: -abs(t.effect or 0.0))


def case_failures(
    session: Session, run: Run, before: dict[int, VerdictStatus]
) -> tuple[list[CaseFailure], list[CaseFailure]]:
    """The head run's failing cases, split as the report counts them: (new, known) against `before`, each
    case's verdict on the merge base (`previous_verdicts`)."""
    new: list[CaseFailure] = []
    known: list[CaseFailure] = []
    for found in run_verdicts(session.connection(), run.id, FAILING):
        previous = before.get(found.case.id)
        row = CaseFailure(
            case=case_label(found.case),
            case_id=found.case.id,
            previous=previous.value if previous else "",
            status=found.verdict.status.value,
            detail=verdict_detail(found.verdict),
        )
        (new if is_new_failure(found.verdict.status, previous) else known).append(row)
    return new, known


@dataclass(frozen=True)
class ReportInputs:
    """What a report is made of besides its timings: the head run, the runs it is judged against, its
    failures and fixes against them, its memory and error values' changes, its kernels and its training
    cases."""

    run: Run
    base_runs: list[Run]
    correctness: list[CaseFailure]
    known_failures: list[CaseFailure]
    fixed: list[CaseFixed]
    memory: list[MemoryChange]
    numerics: list[NumericsChange]
    kernels: KernelEvidence
    training: list[TrainingCase]


def build_pr_report(
    inputs: ReportInputs,
    series: list[SeriesFinding],
    rounds: int | None,
    config: CompareConfig,
    detector_version: str,
    public_url: str,
) -> PrReport:
    run = inputs.run
    if run.pr_number is None:
        raise ValueError(f"run {run.id} is not a pull request's")
    base_versions = [r.environment.te_version for r in inputs.base_runs if r.environment.te_version]
    changed = [
        ChangedTiming(s.timing.series_id, s.info, s.verdict, s.timing)
        for s in series
        if s.verdict in (REGRESSION, IMPROVEMENT) and s.timing.series_id is not None
    ]
    kernels, taken = kernel_findings(inputs.kernels, changed)
    suspects = {k.series_id for k in kernels if k.what == "suspect speed-up"}
    series = [replace(s, verdict=SUSPECT) if s.timing.series_id in suspects else s for s in series]
    return PrReport(
        pr_number=run.pr_number,
        repo=run.commit.repo,
        head_sha=run.commit.sha,
        base_sha=run.merge_base_sha or "",
        gpu_model=run.machine.gpu_model,
        machine=run.machine.name,
        te_version=run.environment.te_version,
        base_te_version=base_versions[0] if base_versions else "",
        run_id=run.id,
        base_run_ids=[r.id for r in inputs.base_runs],
        rounds=rounds,
        counts=dict(Counter(s.verdict for s in series)),
        case_counts=dict(Counter(case_verdicts(series).values())),
        correctness=inputs.correctness,
        fixed=inputs.fixed,
        regressions=_largest_first(series, REGRESSION, taken),
        improvements=_largest_first(series, IMPROVEMENT, taken),
        memory=inputs.memory,
        numerics=inputs.numerics,
        kernels=kernels,
        training=inputs.training,
        known_failures=inputs.known_failures,
        min_effect=config.min_effect,
        alpha=config.alpha,
        detector_version=detector_version,
        public_url=public_url,
    )


def report_inputs(
    session: Session,
    run: Run,
    base_runs: list[Run],
    public_url: str,
    correctness: list[CaseFailure] | None = None,
    fixed: list[FixedCase] | None = None,
) -> ReportInputs:
    """`correctness` (the new failures detection has found) and `fixed` are read from the store where not
    given."""
    before = previous_verdicts(session, run)
    fixed = fixed_cases(session, run, before) if fixed is None else fixed
    new, known = case_failures(session, run, before)
    base_run_ids = [r.id for r in base_runs]
    memory, numerics = memory_and_numerics(session, run.id, base_run_ids)
    return ReportInputs(
        run,
        base_runs,
        new if correctness is None else correctness,
        known,
        fixed_findings(session, base_runs, fixed, public_url),
        memory,
        numerics,
        kernel_evidence(session, run.id, base_run_ids),
        training_cases(session, run, base_runs),
    )


def stored_pr_report(session: Session, run: Run) -> PrReport:
    """The report of a pull request's head run as its stored comparisons (the newest detector's) and the
    store's verdicts give it; without timings where detection has compared none of its series yet."""
    stored = list(
        session.scalars(
            select(PrComparison)
            .where(PrComparison.head_run_id == run.id)
            .order_by(PrComparison.detector_version.desc(), PrComparison.id)
        )
    )
    newest = stored[0].detector_version if stored else ""
    stored = [c for c in stored if c.detector_version == newest]
    infos = series_infos(session, [c.series_id for c in stored if c.series_id is not None])
    series = [
        SeriesFinding.of(c.series_id, infos[c.series_id], c.verdict, c, bool(c.primary))
        for c in stored
        if c.series_id is not None and c.series_id in infos
    ]
    base_runs = merge_base_runs(session, run)
    if stored:  # the runs detection compared against (an A/B session's own, where it had one)
        base_runs = [r for r in base_runs if r.id in set(stored[0].base_run_ids)]
    fields = CompareConfig.__dataclass_fields__
    config = CompareConfig(**{k: v for k, v in (stored[0].config if stored else {}).items() if k in fields})
    rounds = max((c.rounds or 0 for c in stored), default=0) or None
    return build_pr_report(report_inputs(session, run, base_runs, ""), series, rounds, config, newest, "")

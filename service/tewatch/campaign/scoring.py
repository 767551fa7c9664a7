"""How a campaign's pull request did against the truth it knows: the perturbations each head case ran.

Every patched call counts itself (benchmarks/harness/perturb.py), so a head record says which
perturbations its timed call ran. A case they touched should be a regression (unless the change is too
small a part of its time to matter); a case they did not touch should be nothing at all.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy import Engine, select

from tewatch.store.engine.database import session_factory
from tewatch.store.schema.alert_models import PrComparison
from tewatch.store.schema.models import Benchmark, Case, Series

FLAGGED = {"regression", "improvement"}


@dataclass
class PerturbationScore:
    touched: int = 0  # head cases whose timed call ran a perturbation
    regressions: int = 0  # of those, cases with a timing called a regression
    missed: list[str] = field(default_factory=list)  # touched, not a regression: label and verdicts
    flagged_untouched: list[str] = field(default_factory=list)  # untouched, yet a regression or improvement


def _label(case: str, params: dict) -> str:
    return f"{case}({', '.join(f'{k}={v}' for k, v in sorted(params.items()))})"


def touched_cases(head_results: Path) -> dict[str, list[str]]:
    """Case label -> the perturbations its timed call ran, from the head run's records."""
    found = {}
    for path in sorted(head_results.glob("*/*.tewatch/cases/*.json")):
        record = json.loads(path.read_text())
        if record.get("perturbations"):
            found[_label(record["case"], record["params"])] = sorted(record["perturbations"])
    return found


def pr_case_verdicts(engine: Engine, pr_number: int) -> dict[str, dict[str, str]]:
    """Case label -> {timing: verdict} of a pull request's stored comparisons."""
    query = (
        select(Case.case_name, Case.params, Benchmark.name, PrComparison.verdict)
        .join(Series, Series.id == PrComparison.series_id)
        .join(Benchmark, Benchmark.id == Series.benchmark_id)
        .join(Case, Case.id == Series.case_id)
        .where(PrComparison.pr_number == pr_number)
    )
    verdicts: dict[str, dict[str, str]] = defaultdict(dict)
    with session_factory(engine)() as session:
        for case, params, benchmark, verdict in session.execute(query):
            verdicts[_label(case, params or {})][benchmark.rpartition(".")[2]] = verdict
    return dict(verdicts)


def score(touched: dict[str, list[str]], verdicts: dict[str, dict[str, str]]) -> PerturbationScore:
    result = PerturbationScore(touched=sum(1 for label in touched if label in verdicts))
    for label, timings in sorted(verdicts.items()):
        described = f"{label}: " + ", ".join(f"{t} {v}" for t, v in sorted(timings.items()))
        if label in touched:
            if "regression" in timings.values():
                result.regressions += 1
            else:
                result.missed.append(f"{described} ({', '.join(touched[label])})")
        elif FLAGGED & set(timings.values()):
            result.flagged_untouched.append(described)
    return result

"""What changed from one TE release to the next: each release's run judged against the one before by the
pull-request comparer (one run per release is too few points for a change point on the branch)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from itertools import pairwise

from sqlalchemy.orm import Session

from tewatch.detect.compare import CompareVerdict, Comparison
from tewatch.detect.config import CompareConfig
from tewatch.pipeline.history import SeriesInfo
from tewatch.pipeline.pr_comparison import compare_run_samples
from tewatch.store.database import make_engine


@dataclass(frozen=True)
class ReleaseStep:
    base_version: str
    head_version: str
    base_run_id: int
    head_run_id: int
    counts: Counter[str]
    changed: list[tuple[SeriesInfo, Comparison]]  # regressions and improvements, largest first

    def summary(self, public_url: str) -> str:
        counts = ", ".join(f"{n} {verdict}" for verdict, n in sorted(self.counts.items()))
        line = f"TE {self.base_version} -> {self.head_version}: {counts}"
        if self.changed:
            info, largest = self.changed[0]
            line += f"; largest {largest.effect:+.0%}: {info.label}, {public_url}/series/{info.series_id}"
        return f"{line}\n    every series: {public_url}/api/v1/compare?base={self.base_run_id}&head={self.head_run_id}"


def release_steps(
    database_url: str, releases: list[tuple[str, int]], config: CompareConfig | None = None
) -> list[ReleaseStep]:
    """(version, run id) oldest first -> each release's step from the one before."""
    config = config or CompareConfig()
    steps = []
    engine = make_engine(database_url)
    try:
        with Session(engine) as session:
            for (base_version, base_run), (head_version, head_run) in pairwise(releases):
                compared, _ = compare_run_samples(session, head_run, [base_run], config)
                changed = [
                    (info, c)
                    for _, info, c in compared
                    if c.verdict in (CompareVerdict.regression, CompareVerdict.improvement)
                ]
                changed.sort(key=lambda item: -abs(item[1].effect))
                counts = Counter(c.verdict.value for _, _, c in compared)
                steps.append(ReleaseStep(base_version, head_version, base_run, head_run, counts, changed))
    finally:
        engine.dispose()
    return steps

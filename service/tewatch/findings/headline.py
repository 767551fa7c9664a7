"""A pull request report's headline, built once for the comment, the commit status and the page: the
timings counted by case (regressions, improvements, suspect speed-ups apart, unchanged, inconclusive)
and what the rows of the sections it changed count for (`Row.finding`), each count worded and weighed."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Literal

from tewatch.findings.pr_report import FIXED, NEW_FAILURE, SECTIONS, Finding, PrReport

Tone = Literal["failure", "note", "good", "neutral"]
REGRESSION = Finding("regressions", "failure", "regression", "regressions")
SUSPECT = Finding("suspects", "note", "suspect speed-up", "suspect speed-ups")


@dataclass(frozen=True)
class Part:
    """One count of the headline; `always`: worded even at 0 (`0 regressions`)."""

    key: str
    count: int
    one: str
    many: str
    tone: Tone
    always: bool = False

    @property
    def text(self) -> str:
        return f"{self.count} {self.one if self.count == 1 else self.many}"

    @property
    def shown(self) -> bool:
        return bool(self.count) or self.always


def _part(finding: Finding, count: int, always: bool = False) -> Part:
    return Part(finding.key, count, finding.one, finding.many, finding.weight, always)


@dataclass(frozen=True)
class Headline:
    parts: tuple[Part, ...]
    noun: str  # what the timings count: "cases", or "comparisons" in a report that counted no cases

    def count(self, key: str) -> int:
        return sum(p.count for p in self.parts if p.key == key)

    @property
    def failures(self) -> tuple[Part, ...]:
        return tuple(p for p in self.parts if p.tone == "failure" and p.count)

    @property
    def failed(self) -> bool:
        return bool(self.failures)

    @property
    def quiet(self) -> bool:
        """No failure, note or timing change: nothing but the cases it fixes, if any."""
        return not any(p.count for p in self.parts if p.tone != "neutral" and p.key != FIXED.key)

    @property
    def text(self) -> str:
        return " · ".join(p.text for p in self.parts if p.shown)


def _timing_counts(report: PrReport) -> tuple[dict[str, int], str]:
    if report.case_counts:
        return report.case_counts, "cases"
    return report.counts, "comparisons"


def _findings(report: PrReport) -> dict[Finding, int]:
    """Each finding of the sections the pull request changed, counted, in the sections' order."""
    found: dict[Finding, int] = {}
    for section in SECTIONS:
        if not section.changed:
            continue
        for row in report.rows(section):
            finding = row.finding()
            if finding is not None:
                found[finding] = found.get(finding, 0) + 1
    return found


def headline(report: PrReport) -> Headline:
    counts, noun = _timing_counts(report)
    found = _findings(report)
    fixed = found.pop(FIXED, 0)
    timing = [
        _part(NEW_FAILURE, found.pop(NEW_FAILURE, 0), always=True),
        replace(_part(FIXED, fixed), tone="good"),
        _part(REGRESSION, counts.get("regression", 0), always=True),
        Part("improvements", counts.get("improvement", 0), "improvement", "improvements", "good", True),
        _part(SUSPECT, counts.get("suspect", 0)),
        Part("unchanged", counts.get("unchanged", 0), "unchanged", "unchanged", "neutral", True),
        Part("inconclusive", counts.get("inconclusive", 0), "inconclusive", "inconclusive", "neutral", True),
        Part("unstable", counts.get("unstable", 0), "unstable", "unstable", "neutral"),
    ]
    return Headline((*timing, *(_part(f, n) for f, n in found.items())), noun)


def combined(headlines: Iterable[Headline]) -> Headline | None:
    """The headlines of several reports (a pull request measured on several machines) as one: each count
    summed, in the order they first appear; None for none."""
    parts: dict[str, Part] = {}
    noun = ""
    for one in headlines:
        noun = noun or one.noun
        for part in one.parts:
            kept = parts.get(part.key)
            parts[part.key] = replace(kept, count=kept.count + part.count) if kept else part
    return Headline(tuple(parts.values()), noun) if parts else None

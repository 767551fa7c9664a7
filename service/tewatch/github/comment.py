"""The pull request's one comment: found again by the hidden marker it starts with, and holding one
section per GPU model, each the Markdown of that GPU's latest `pr.report`, then the line of each finished
bisection that answered one of the pull request's alerts (`bisection.finished`), kept as reports come.

A section is kept while it reports the same head commit as the newest section; a report older than the
section it would replace (a retry that arrives late) changes nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from urllib.parse import quote, unquote

from tewatch.github.report import PrReportEvent

MARKER = "<!-- tewatch:pr-report -->"
SECTION = re.compile(
    r"<!-- tewatch:section gpu=(?P<gpu>\S+) head=(?P<head>[0-9A-Za-z]+) at=(?P<at>\S+) -->\n"
    r"(?P<markdown>.*?)\n<!-- /tewatch:section -->",
    re.DOTALL,
)
BISECTION = re.compile(
    r"<!-- tewatch:bisection id=(?P<id>\d+) -->\n(?P<line>.*?)\n<!-- /tewatch:bisection -->"
)


@dataclass(frozen=True)
class Section:
    gpu_model: str
    head_sha: str
    created_at: str
    markdown: str

    @property
    def at(self) -> datetime:
        return datetime.fromisoformat(self.created_at)

    def render(self) -> str:
        return (
            f"<!-- tewatch:section gpu={quote(self.gpu_model, safe='')} head={self.head_sha} "
            f"at={quote(self.created_at, safe='')} -->\n{self.markdown.rstrip()}\n<!-- /tewatch:section -->"
        )


@dataclass(frozen=True)
class BisectionLine:
    bisection_id: int
    line: str

    def render(self) -> str:
        one_line = " ".join(self.line.split())
        return f"<!-- tewatch:bisection id={self.bisection_id} -->\n{one_line}\n<!-- /tewatch:bisection -->"


def is_ours(body: str | None) -> bool:
    """Starts with the marker (a reply quoting the comment starts with `>`, and is not ours)."""
    return bool(body and body.startswith(MARKER))


def sections(body: str) -> list[Section]:
    return [
        Section(unquote(m["gpu"]), m["head"], unquote(m["at"]), m["markdown"]) for m in SECTION.finditer(body)
    ]


def bisection_lines(body: str) -> list[BisectionLine]:
    return [BisectionLine(int(m["id"]), m["line"]) for m in BISECTION.finditer(body)]


def render(kept: list[Section], lines: list[BisectionLine]) -> str:
    parts = [s.render() for s in sorted(kept, key=lambda s: s.gpu_model)]
    parts += [b.render() for b in sorted(lines, key=lambda b: b.bisection_id)]
    return "\n\n".join([MARKER, *parts]) + "\n"


def with_bisection(existing: str | None, line: BisectionLine) -> str:
    """The comment with a finished bisection's line added, or put in place of its earlier one."""
    lines = {b.bisection_id: b for b in bisection_lines(existing or "")}
    lines[line.bisection_id] = line
    return render(sections(existing or ""), list(lines.values()))


def comment_body(existing: str | None, event: PrReportEvent) -> str | None:
    """The comment with `event`'s report merged in; None when the comment already holds something newer."""
    report = event.report
    incoming = Section(report.gpu_model, report.head_sha, event.created_at, report.markdown)
    by_gpu = {s.gpu_model: s for s in sections(existing or "")}
    current = by_gpu.get(incoming.gpu_model)
    if current is not None and current.at > incoming.at:
        return None
    by_gpu[incoming.gpu_model] = incoming
    newest = max(by_gpu.values(), key=lambda s: s.at)
    if newest is not incoming and newest.head_sha != incoming.head_sha:
        return None  # a report of a head the pull request has already moved past
    kept = [s for s in by_gpu.values() if s.head_sha == newest.head_sha]
    return render(kept, bisection_lines(existing or ""))

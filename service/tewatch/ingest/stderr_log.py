"""Error text from what `asv run -e` printed: asv keeps no error text in its results file."""

from __future__ import annotations

import re
from dataclasses import dataclass

_HEADER = re.compile(r"^\[\s*\d+(?:\.\d+)?%\] ·{3} ([A-Za-z_][\w]*(?:\.[\w]+)+)(?:\s|$)")
# asv's progress prefix, or the indentation it gives continuation lines
_PREFIX = re.compile(r"^(?:\[\s*\d+(?:\.\d+)?%\] ·+ ?| {13,14})")
_FOR_PARAMETERS = "For parameters: "
_EXCEPTION_LINE = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Failure|Warning)):? ?(.*)$")
TRACEBACK_HEAD_CHARS = 4000
EXCEPTION_CLASS_CHARS = 200  # the verdicts column


@dataclass
class FailureText:
    text: str
    timed_out: bool
    exception_class: str | None
    message: str


def split_sections(log: str) -> dict[str, list[str]]:
    """Benchmark name -> the lines asv printed under it (first section wins, prefixes stripped).

    A NUL in the log (no text column keeps one) reads as U+FFFD, like bytes that are not UTF-8."""
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for raw in log.replace("\x00", "\ufffd").splitlines():
        header = _HEADER.match(raw)
        if header:
            name = header.group(1)
            current = [] if name not in sections else None
            if current is not None:
                sections[name] = current
            continue
        if current is not None:
            current.append(_PREFIX.sub("", raw, count=1).rstrip())
    return sections


def failure_text(
    sections: dict[str, list[str]], benchmark: str, param_reprs: tuple[str, ...]
) -> FailureText | None:
    lines = sections.get(benchmark)
    if not lines:
        return None
    if param_reprs:
        marker = _FOR_PARAMETERS + ", ".join(param_reprs)
        try:
            start = lines.index(marker) + 1
        except ValueError:
            return None
        end = next((i for i in range(start, len(lines)) if lines[i].startswith(_FOR_PARAMETERS)), len(lines))
        block = lines[start:end]
    else:
        block = lines
    block = [line for line in block if not set(line) <= set("=- ")] if param_reprs else block
    text = "\n".join(block).strip()
    if not text:
        return None
    return _describe(text)


def _describe(text: str) -> FailureText:
    meaningful = [line.strip() for line in text.splitlines() if line.strip()]
    timed_out = any("timed out" in line for line in meaningful)
    for line in reversed(meaningful):
        match = _EXCEPTION_LINE.match(line)
        if match:
            exception_class = match.group(1)[:EXCEPTION_CLASS_CHARS]
            return FailureText(text[:TRACEBACK_HEAD_CHARS], timed_out, exception_class, match.group(2))
    asv_lines = [line.removeprefix("asv:").strip() for line in meaningful if line.startswith("asv:")]
    message = (asv_lines or meaningful)[-1]  # asv's own words without its prefix: the check is named asv
    return FailureText(text[:TRACEBACK_HEAD_CHARS], timed_out, None, message)

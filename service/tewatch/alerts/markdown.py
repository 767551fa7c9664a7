"""The `pr.report` Markdown body, ready to post as a PR comment: correctness first, then the cases the PR
fixes (failing on the merge base, passing on the head), then the largest regressions with effect and
interval, then improvements, with links to the dashboard.

Everything in it that came from an upload (benchmark names, params, error text from PR code) is escaped
so it cannot break the table or inject HTML.
"""

from __future__ import annotations

from dataclasses import dataclass, field

MAX_ROWS = 10
MESSAGE_CHARS = 160


@dataclass(frozen=True)
class CorrectnessRow:
    case: str
    previous: str  # "pass", or "" when the base has no such case
    status: str
    detail: str
    case_id: int | None = None


@dataclass(frozen=True)
class FixedRow:
    """A case failing on the merge base and passing on the head."""

    case: str
    previous: str  # its failing status on the merge base: fail_accuracy, error, timeout or oom
    detail: str  # what it failed with there
    case_id: int | None = None


@dataclass(frozen=True)
class TimingRow:
    benchmark: str
    unit: str
    baseline: float
    head: float
    effect: float
    ci_low: float
    ci_high: float
    series_id: int | None = None


@dataclass
class PrReport:
    pr_number: int
    head_sha: str
    base_sha: str
    gpu_model: str
    public_url: str
    correctness: list[CorrectnessRow] = field(default_factory=list)
    fixed: list[FixedRow] = field(default_factory=list)
    regressions: list[TimingRow] = field(default_factory=list)
    improvements: list[TimingRow] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)  # verdict -> number of comparisons
    # verdict -> cases (a case's timings: any significant one decides, else its steadier one)
    case_counts: dict[str, int] = field(default_factory=dict)
    rounds: int | None = None  # A/B rounds paired, where the runs were measured so
    min_effect: float = 0.03
    alpha: float = 0.05
    detector_version: str = ""


def escape_cell(text: str) -> str:
    text = " ".join(str(text).split())
    for raw, safe in (
        ("&", "&amp;"),
        ("<", "&lt;"),
        (">", "&gt;"),
        ("|", "\\|"),
        ("`", "'"),
        ("[", "\\["),
        ("]", "\\]"),
    ):
        text = text.replace(raw, safe)
    return text


def code(text: str) -> str:
    """A code span in a table cell: literal text, so only the pipe (GFM tables) and backticks matter."""
    return "`" + " ".join(str(text).split()).replace("`", "'").replace("|", "\\|") + "`"


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def format_value(value: float, unit: str) -> str:
    if unit == "seconds":
        for scale, suffix in ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs")):
            if abs(value) >= scale:
                return f"{value / scale:.4g} {suffix}"
        return f"{value / 1e-9:.4g} ns"
    if unit == "fraction":
        return f"{value * 100:.1f} %"
    return f"{value:.4g} {escape_cell(unit)}"


def percent(value: float) -> str:
    return f"{value * 100:+.1f} %"


def _short(text: str) -> str:
    text = escape_cell(text)
    return text[: MESSAGE_CHARS - 1] + "…" if len(text) > MESSAGE_CHARS else text


def _fixed_table(rows: list[FixedRow], base_url: str) -> list[str]:
    lines = ["| case | base | head | it failed with |", "|---|---|---|---|"]
    for row in rows[:MAX_ROWS]:
        name = code(row.case)
        if row.case_id is not None:
            name = f"[{name}]({base_url}/case/{row.case_id})"
        lines.append(f"| {name} | {escape_cell(row.previous)} | **pass** | {_short(row.detail)} |")
    if len(rows) > MAX_ROWS:
        lines.append(f"| … and {len(rows) - MAX_ROWS} more | | | |")
    return lines


def _timing_table(rows: list[TimingRow], base_url: str, pr_number: int) -> list[str]:
    lines = ["| benchmark | base | head | change | 95 % interval |", "|---|---|---|---|---|"]
    for row in rows[:MAX_ROWS]:
        name = code(row.benchmark)
        if row.series_id is not None:
            name = f"[{name}]({base_url}/series/{row.series_id}?pr={pr_number})"
        lines.append(
            f"| {name} | {format_value(row.baseline, row.unit)} | {format_value(row.head, row.unit)} "
            f"| **{percent(row.effect)}** | {percent(row.ci_low)} … {percent(row.ci_high)} |"
        )
    if len(rows) > MAX_ROWS:
        lines.append(f"| … and {len(rows) - MAX_ROWS} more | | | | |")
    return lines


def render_pr_report(report: PrReport) -> str:
    base_url = report.public_url.rstrip("/")
    counts = report.case_counts or report.counts
    noun = "case" if report.case_counts else "comparison"
    parts = [
        plural(len(report.correctness), "correctness failure"),
        *([f"{len(report.fixed)} fixed"] if report.fixed else []),
        plural(counts.get("regression", 0), "regression"),
        plural(counts.get("improvement", 0), "improvement"),
        f"{counts.get('unchanged', 0)} unchanged",
        f"{counts.get('inconclusive', 0)} inconclusive",
    ]
    if counts.get("unstable"):
        parts.append(f"{counts['unstable']} unstable")
    summary = " · ".join(parts)
    measured = (
        f"{report.rounds} interleaved A/B rounds on one runner" if report.rounds else "one run per side"
    )
    lines = [
        f"## tewatch: PR #{report.pr_number} on {escape_cell(report.gpu_model)}",
        "",
        f"Head {code(report.head_sha[:12])} against merge base {code(report.base_sha[:12])} ({measured}).",
        "",
        f"**{summary}** ({noun}s)",
        "",
    ]
    if report.correctness:
        lines += ["### Correctness", "", "| case | base | head | detail |", "|---|---|---|---|"]
        for row in report.correctness[:MAX_ROWS]:
            lines.append(
                f"| {code(row.case)} | {row.previous or 'new'} | **{escape_cell(row.status)}** "
                f"| {_short(row.detail)} |"
            )
        if len(report.correctness) > MAX_ROWS:
            lines.append(f"| … and {len(report.correctness) - MAX_ROWS} more | | | |")
        lines.append("")
    if report.fixed:
        lines += [
            "### Fixed by this pull request",
            "",
            "Failing on the merge base, passing here.",
            "",
            *_fixed_table(report.fixed, base_url),
            "",
        ]
    if report.regressions:
        lines += [
            "### Largest regressions",
            "",
            *_timing_table(report.regressions, base_url, report.pr_number),
            "",
        ]
    if report.improvements:
        lines += ["### Improvements", "", *_timing_table(report.improvements, base_url, report.pr_number), ""]
    if not (report.correctness or report.regressions or report.improvements):
        new = "new " if report.fixed else ""
        lines += [f"No {new}correctness failure and no timing change beyond the minimum effect.", ""]
    lines += [
        f"[This PR on the dashboard]({base_url}/pr/{report.pr_number}) · [Open alerts]({base_url}/alerts)",
        "",
        (
            f"<sub>Minimum effect {report.min_effect * 100:g} %, false discovery rate {report.alpha * 100:g} % "
            f"(Benjamini-Hochberg); intervals include run-to-run noise. {escape_cell(report.detector_version)}</sub>"
        ),
    ]
    return "\n".join(lines) + "\n"

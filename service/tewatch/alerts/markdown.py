"""The `pr.report` Markdown body, ready to post as a PR comment: the report's sections of what the pull
request changed under its headline (tewatch.findings.headline), in their order
(tewatch.findings.pr_report.SECTIONS: correctness first, then the cases it fixes, the largest regressions
with effect and interval, improvements), with links to the dashboard.

Everything in it that came from an upload (benchmark names, params, error text from PR code, GPU models)
is inert (markdown_text): it cannot break the table, inject HTML, or mention, reference or link anything.
"""

from __future__ import annotations

from tewatch.alerts.markdown_text import code, escape_cell
from tewatch.findings.headline import headline
from tewatch.findings.pr_report import FIXED, SECTIONS, PrReport
from tewatch.findings.table import Cell, Section

MAX_ROWS = 10
MESSAGE_CHARS = 160


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


def _cell(cell: Cell, base_url: str) -> str:
    numbers = [n for n in cell.numbers if n is not None]
    if len(numbers) < len(cell.numbers):
        return "—"
    match cell.kind:
        case "case":
            name = code(cell.text)
            return f"[{name}]({base_url}{cell.link})" if cell.link else name
        case "previous":
            return escape_cell(cell.text) or "new"
        case "status":
            return f"**{escape_cell(cell.text)}**"
        case "detail":
            return _short(cell.text)
        case "value":
            return format_value(numbers[0], cell.unit)
        case "change":
            return f"**{percent(numbers[0])}**"
        case "interval":
            low, high = numbers
            return f"{percent(low)} … {percent(high)}"


def _section(report: PrReport, section: Section, base_url: str) -> list[str]:
    rows = report.rows(section)
    lines = [f"### {section.title}", "", *([section.lead, ""] if section.lead else [])]
    lines += ["| " + " | ".join(section.columns) + " |", "|" + "---|" * len(section.columns)]
    for row in rows[:MAX_ROWS]:
        lines.append("| " + " | ".join(_cell(c, base_url) for c in row.cells(report.pr_number)) + " |")
    if len(rows) > MAX_ROWS:
        lines.append(f"| … and {len(rows) - MAX_ROWS} more |" + " |" * (len(section.columns) - 1))
    return [*lines, ""]


def _no_base_runs(report: PrReport) -> list[str]:
    where = f"machine {code(report.machine)} or any other {escape_cell(report.gpu_model)}"
    return [
        f"**The merge base {code(report.base_sha[:12])} has no runs on {where}**, so every timing is "
        "inconclusive and every failing case counts as new. Upload the merge base's results measured on this machine (`tewatch upload RESULTS "
        "--branch main` at that commit), or measure base and head here in A/B rounds (`tewatch run --ab`).",
        "",
    ]


def render_pr_report(report: PrReport) -> str:
    base_url = report.public_url.rstrip("/")
    said = headline(report)
    measured = (
        f"{report.rounds} interleaved A/B rounds on one runner" if report.rounds else "one run per side"
    )
    lines = [
        f"## tewatch: PR #{report.pr_number} on {escape_cell(report.gpu_model)}",
        "",
        f"Head {code(report.head_sha[:12])} against merge base {code(report.base_sha[:12])} ({measured}).",
        "",
        f"**{said.text}** ({said.noun})",
        "",
    ]
    if not report.base_has_runs:
        lines += _no_base_runs(report)
    for section in SECTIONS:
        if section.changed and report.rows(section):
            lines += _section(report, section, base_url)
    if report.base_has_runs and said.quiet:
        new = "new " if said.count(FIXED.key) else ""
        lines += [f"No {new}correctness failure and no timing change beyond the minimum effect.", ""]
    lines += [
        f"[This PR on the dashboard]({report.links.pr}) · [Open alerts]({report.links.alerts})",
        "",
        (
            f"<sub>Minimum effect {report.min_effect * 100:g} %, false discovery rate {report.alpha * 100:g} % "
            f"(Benjamini-Hochberg); intervals include run-to-run noise. {escape_cell(report.detector_version)}</sub>"
        ),
    ]
    return "\n".join(lines) + "\n"

"""The compile-vs-eager grid's table rows as HTML, built in Python: a grid holds thousands of cells, and a
Jinja macro call per cell cost more than every query of the page. Every value from an upload is escaped.
"""

from __future__ import annotations

from collections.abc import Sequence

from markupsafe import Markup, escape

from tewatch_dashboards.status import css_class
from tewatch_dashboards.templating import breakable, format_bytes, format_ratio, format_value
from tewatch_dashboards.views.matrix import MatrixCell, MatrixRow

STATUS_LABELS: dict[str | None, str] = {
    "pass": "pass",
    "fail_accuracy": "fail acc.",
    "error": "error",
    "unsupported": "unsupp.",
    "timeout": "timeout",
    "oom": "oom",
    None: "—",
}
EMPTY_CELL = Markup('<td class="none"></td>')


def _link(cell: MatrixCell, note: str, note_class: str) -> str:
    r = cell.row
    status = r.status
    cls = css_class(r.perf_signal if r.perf_signal and status == "pass" else status)
    title = f"{r.case_name} {r.params_label}"
    if r.message:
        title += f" — {r.message}"
    elif r.reason:
        title += f" — {r.reason}"
    parts = [
        f'<a class="{cls}" href="/case/{r.case_id}" title="{escape(title)}">',
        f'<div class="cell-status">{escape(STATUS_LABELS.get(status, status))}</div>',
    ]
    if r.exception_class:
        parts.append(f'<div class="cell-exc">{breakable(r.exception_class)}</div>')
    if note:
        parts.append(f'<div class="{note_class}">{escape(note)}</div>')
    parts.append("</a>")
    return "".join(parts)


def _td(
    cell: MatrixCell | None, row: MatrixRow, column: str, rank: int | None, is_check: bool, memory: bool
) -> str:
    if cell is None:
        return EMPTY_CELL
    r = cell.row
    if memory and not is_check:
        note = "" if cell.peak_bytes is None else format_bytes(cell.peak_bytes)
        note_class = "cell-bytes"
    elif not is_check and column == "eager":
        note, note_class = (
            ("" if r.latest_value is None else format_value(r.latest_value, r.primary_unit)),
            "cell-ratio",
        )
    elif not is_check:
        note, note_class = ("" if cell.ratio is None else format_ratio(cell.ratio)), "cell-ratio"
    else:
        note = f"{len(cell.variants)} variants" if len(cell.variants) > 1 else ""
        note_class = "cell-variants"
    where = f' data-rank="{rank}"' if rank is not None else ""
    where += f' data-check="{escape(column)}"' if is_check else f' data-mode="{escape(column)}"'
    if memory and cell.peak_bytes is not None:
        where += f' data-peak-bytes="{cell.peak_bytes:.0f}"'
    return (
        f'<td class="{"cell check" if is_check else "cell"}"{where} data-status="{escape(r.status or "")}"'
        f' data-recipe="{escape(row.recipe or "")}" data-backend="{escape(row.backend or "")}">'
        f"{_link(cell, note, note_class)}</td>"
    )


def grid_cells(
    row: MatrixRow,
    ranks: Sequence[int],
    modes: Sequence[str],
    rank_checks: Sequence[str],
    memory: bool = False,
) -> Markup:
    """A row's cells of the compile-vs-eager table, in its header's order: per rank the modes, then the
    rank checks; with `memory`, each mode's cell notes its peak allocated bytes instead of its time."""
    tds = []
    for rank in ranks:
        tds += [_td(row.cells.get((rank, mode)), row, mode, rank, False, memory) for mode in modes]
        tds += [_td(row.cells.get((rank, op)), row, op, rank, True, memory) for op in rank_checks]
    return Markup("".join(tds))


def check_cells(row: MatrixRow, row_checks: Sequence[str]) -> Markup:
    """A row's cells of the per-recipe checks table, in its header's order."""
    return Markup("".join(_td(row.cells.get((0, op)), row, op, None, True, False) for op in row_checks))

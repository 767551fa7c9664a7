"""The compile-vs-eager grid: cases placed by rank and torch.compile mode (or check), one grid per GPU
model and world size, compiled time over eager's per cell."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from sqlalchemy import Connection

from tewatch.store.reads.case_reads import latest_metric
from tewatch_dashboards.views.case_rows import CaseRow, add_perf_signals, fill_values, latest_cases
from tewatch_dashboards.views.filters import Filters

MATRIX_MODES = ("eager", "default", "reduce-overhead", "max-autotune")
MATRIX_RANKS = (2, 3, 4)
# Checks shown beside the compile modes: per input rank (the fake-vs-real shape contract of quantized
# tensors, which predicts the 3D/4D compile failures) and per recipe (CPU round trip, checkpoint parity).
RANK_CHECK_OPS = ("shape_contract",)
ROW_CHECK_OPS = (
    "cpu_round_trip",
    "checkpoint",
    "cpu_ops",
    "determinism",
    "nd_update",
    "dcp_round_trip",
    "fsdp_dcp_round_trip",
)
# Params that place a case in the grid; whatever else a case has (a shape, say) splits rows.
MATRIX_AXES = frozenset({"recipe", "rank", "mode", "backend", "quantizer", "variant", "world_size"})
OVER_EAGER = "over_eager"  # the record metric of a compiled case's time over eager's, in one process
PEAK_ALLOCATED = "peak_allocated_bytes"  # the record metric the memory view shows per cell
VIEWS = ("time", "memory")


@dataclass
class MatrixCell:
    row: CaseRow
    # compiled time / eager time of the same recipe and rank: measured in the compiled case's process where
    # it says so (`over_eager`), else the latest of each case
    ratio: float | None = None
    variants: list[str] = field(default_factory=list)  # e.g. nvfp4, nvfp4-rht, nvfp4-2d in one contract cell
    peak_bytes: float | None = None  # the memory view's: peak allocated bytes over the timed calls


@dataclass
class MatrixRow:
    backend: str | None
    recipe: str | None
    other: str  # the params outside the grid axes, e.g. "shape=4096x4096"
    cells: dict[tuple[int, str], MatrixCell] = field(default_factory=dict)  # (rank or 0, mode or op)


@dataclass
class Matrix:
    gpu_model: str
    world_size: int | None
    case_names: list[str]
    rows: list[MatrixRow]
    modes: list[str]  # MATRIX_MODES present in this grid (the quick profile times eager and default only)
    rank_checks: list[str]  # RANK_CHECK_OPS present in this grid
    row_checks: list[str]  # ROW_CHECK_OPS present in this grid

    @property
    def grid_rows(self) -> list[MatrixRow]:
        """The rows with a case at some input rank: the compile-vs-eager table's."""
        return [row for row in self.rows if any(rank for rank, _ in row.cells)]

    @property
    def check_rows(self) -> list[MatrixRow]:
        """The rows with a per-recipe check: the checks table's."""
        return [row for row in self.rows if any(rank == 0 for rank, _ in row.cells)]


def matrix_column(mode: str | None, rank: int | None, labels: dict) -> tuple[int, str] | None:
    """Where a case sits in the grid, or None when it does not belong there."""
    op = str(labels.get("op", ""))
    if mode in MATRIX_MODES and rank in MATRIX_RANKS:
        return rank, mode
    if mode is None and op in RANK_CHECK_OPS and rank in MATRIX_RANKS:
        return rank, op
    if mode is None and rank is None and op in ROW_CHECK_OPS:
        return 0, op
    return None


def matrix_grids(conn: Connection, filters: Filters, view: str = "time") -> list[Matrix]:
    """The grids; the `memory` view reads each cell's peak allocated bytes beside its verdict."""
    placed: dict[int, tuple[int, str]] = {}
    rows = []
    for r in latest_cases(conn, filters):
        if (column := matrix_column(r.mode, r.rank, r.labels)) is not None:
            placed[r.case_id] = column
            rows.append(r)
    add_perf_signals(conn, rows)
    fill_values(conn, rows, filters.branch)
    grids: dict[tuple[str, int | None], dict[tuple, MatrixRow]] = defaultdict(dict)
    names: dict[tuple[str, int | None], set[str]] = defaultdict(set)
    for r in rows:
        column = placed[r.case_id]
        other = ", ".join(f"{k}={v}" for k, v in sorted(r.params.items()) if k not in MATRIX_AXES)
        grid_key = (r.gpu_model, r.world_size)
        names[grid_key].add(r.case_name)
        mrow = grids[grid_key].setdefault(
            (r.backend or "", r.recipe or "", other), MatrixRow(r.backend, r.recipe, other)
        )
        cell = mrow.cells.get(column)
        variant = str(r.labels.get("variant") or r.params.get("quantizer") or "")
        if cell is None or r.severity < cell.row.severity:
            mrow.cells[column] = MatrixCell(r, variants=cell.variants if cell else [])
        if variant:
            mrow.cells[column].variants.append(variant)
    in_process = latest_metric(
        conn, [r.case_id for r in rows if r.mode in MATRIX_MODES[1:]], OVER_EAGER, filters.branch
    )
    peaks = (
        latest_metric(conn, [r.case_id for r in rows], PEAK_ALLOCATED, filters.branch)
        if view == "memory"
        else {}
    )
    out = []
    for (gpu, ws), grid in sorted(grids.items(), key=lambda kv: (kv[0][0], kv[0][1] or 0)):
        columns = {c for mrow in grid.values() for c in mrow.cells}
        for mrow in grid.values():
            for (rank, mode), cell in mrow.cells.items():
                cell.peak_bytes = peaks.get(cell.row.case_id)
                eager = mrow.cells.get((rank, "eager"))
                if mode not in MATRIX_MODES[1:]:
                    continue
                if in_process.get(cell.row.case_id) is not None:
                    cell.ratio = in_process[cell.row.case_id]
                elif eager and eager.row.latest_value and cell.row.latest_value is not None:
                    cell.ratio = cell.row.latest_value / eager.row.latest_value
        out.append(
            Matrix(
                gpu_model=gpu,
                world_size=ws,
                case_names=sorted(names[(gpu, ws)]),
                rows=sorted(grid.values(), key=lambda m: (m.backend or "", m.recipe or "", m.other)),
                modes=[mode for mode in MATRIX_MODES if any(c[1] == mode for c in columns)],
                rank_checks=[op for op in RANK_CHECK_OPS if any(c[1] == op for c in columns)],
                row_checks=[op for op in ROW_CHECK_OPS if (0, op) in columns],
            )
        )
    return out

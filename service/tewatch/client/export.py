"""What `tewatch export` writes: the client's DataFrames for a selection of runs, as CSV or Parquet."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pandas as pd

from tewatch.client import Client

FORMATS = ("parquet", "csv")


def export_tables(
    tw: Client,
    out: Path,
    tables: Sequence[str],
    *,
    fmt: str = "parquet",
    branch: str | None = None,
    machine: str | None = None,
    pr: int | None = None,
    since: str | None = None,
    until: str | None = None,
) -> Iterator[tuple[Path, pd.DataFrame]]:
    """Write each table of `tables` to out/<table>.<fmt> and yield (path, frame) as it is written.

    The runs are those of `branch`, `machine`, `pr` and the start-time range; samples are theirs. Latest
    verdicts, change points and alerts follow `branch` (and `pr`), and with `machine`, `pr` or a time range
    keep only the rows that came from the selected runs. `comparisons` needs `pr`."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}: {' or '.join(FORMATS)}")
    if fmt == "parquet":
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            raise ImportError('Parquet needs pyarrow: pip install "tewatch[analysis]" (or CSV)') from None
    runs = tw.runs(branch=branch, machine=machine, pr=pr, since=since, until=until)
    selected = set(runs["run_id"].dropna().astype(int))
    narrowed = machine is not None or pr is not None or since is not None or until is not None

    def of_runs(frame: pd.DataFrame) -> pd.DataFrame:
        return frame[frame["run_id"].isin(selected)].reset_index(drop=True) if narrowed else frame

    def comparisons() -> pd.DataFrame:
        if pr is None:
            raise ValueError("the comparisons table is a pull request's: give a pull request number")
        return tw.comparisons(pr)

    readers: dict[str, Callable[[], pd.DataFrame]] = {
        "runs": lambda: runs,
        "samples": lambda: tw.samples(runs=runs),
        "verdicts": lambda: of_runs(tw.verdicts(branch=branch)),
        "change_points": lambda: of_runs(tw.change_points(branch=branch, active=None)),
        "alerts": lambda: of_runs(tw.alerts(branch=branch, pr=pr)),
        "comparisons": comparisons,
    }
    unknown = [name for name in tables if name not in readers]
    if unknown:
        raise ValueError(f"unknown table {', '.join(unknown)}: choose from {', '.join(readers)}")
    out.mkdir(parents=True, exist_ok=True)
    for name in tables:
        frame = readers[name]()
        path = out / f"{name}.{fmt}"
        if fmt == "parquet":
            frame.to_parquet(path, engine="pyarrow", index=False)
        else:
            frame.to_csv(path, index=False)
        yield path, frame

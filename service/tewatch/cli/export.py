"""`tewatch export`: the client's DataFrames (tewatch.client) as CSV or Parquet files, one per table.
pandas is imported by tewatch.client only, when the command runs."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from tewatch.cli.app import app
from tewatch.cli.options import fail

TABLES = ("runs", "samples", "verdicts", "change_points", "alerts", "comparisons")
TABLE_HELP = f"only these tables (repeatable): {', '.join(TABLES)}; default: all (comparisons with --pr)"


class Format(str, Enum):
    parquet = "parquet"
    csv = "csv"


@app.command()
def export(
    out: Annotated[Path, typer.Argument(help="folder to write the files to (created if missing)")],
    url: str = typer.Option(..., envvar="TEWATCH_URL", help="service base URL, e.g. http://127.0.0.1:8000"),
    token: str | None = typer.Option(None, envvar="TEWATCH_TOKEN", help="token, where reads need one"),
    branch: str | None = typer.Option(
        None, help="runs of this branch (and its latest verdicts, change points, alerts)"
    ),
    machine: str | None = typer.Option(None, help="runs of this machine (its name, e.g. vm-h200)"),
    since: str | None = typer.Option(
        None, help="runs started at or after this time (ISO 8601; UTC without a zone)"
    ),
    until: str | None = typer.Option(
        None, help="runs started before this time (ISO 8601; UTC without a zone)"
    ),
    pr: int | None = typer.Option(None, "--pr", help="runs of this pull request, and its comparisons"),
    fmt: Format = typer.Option(Format.parquet, "--format", help="parquet (typed, via pyarrow) or csv"),
    table: list[str] | None = typer.Option(None, "--table", help=TABLE_HELP, show_default=False),
) -> None:
    """Write runs, samples (one row per sample), latest verdicts, change points, alerts and, with --pr, the
    pull request's comparisons, for the runs that --branch, --machine, --pr and --since/--until select; with
    --machine, --pr or a time range, the verdicts, change points and alerts of other runs are left out.
    The columns and dtypes are tewatch.client's; needs the analysis extra (pandas, pyarrow)."""
    wanted = list(
        dict.fromkeys(
            [name.replace("-", "_") for name in table]  # change-points reads as change_points
            if table
            else [name for name in TABLES if name != "comparisons" or pr is not None]
        )
    )
    unknown = [name for name in wanted if name not in TABLES]
    if unknown:
        raise fail(f"unknown table {', '.join(unknown)}: choose from {', '.join(TABLES)}")
    if "comparisons" in wanted and pr is None:
        raise fail("the comparisons table is a pull request's: give --pr")
    try:
        from tewatch.client import Client, ClientError
        from tewatch.client.export import export_tables
    except ImportError:
        raise fail('tewatch export needs pandas and pyarrow: pip install "tewatch[analysis]"') from None
    try:
        with Client(url, token) as tw:
            written = export_tables(
                tw,
                out,
                wanted,
                fmt=fmt.value,
                branch=branch,
                machine=machine,
                pr=pr,
                since=since,
                until=until,
            )
            for path, frame in written:
                typer.echo(f"{path}: {len(frame)} rows, {len(frame.columns)} columns")
    except ClientError as exc:
        raise fail(str(exc)) from None
    except ImportError as exc:
        raise fail(str(exc)) from None
    except OSError as exc:
        raise fail(f"cannot write to {out}: {exc}") from None

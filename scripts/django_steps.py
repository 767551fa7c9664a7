"""tewatch's change points beside asv's own step detection on two real series of django/django-asv's
ubuntu-latest history (python 3.12, ../shared/data/ext-django-asv): `FormValidate.time_form_validate`,
77 times slower on its newest 18 commits, and `QCreate.time_create_small`, whose runs are slow in 35 % of
the commits before 2026-04-24 and in 80 % after. One value per commit (the median of its runs), commits
by the results file's date, as the store orders them without a commit graph.

asv's side: `asv.step_detect.detect_steps` (its piecewise-constant fit) with every boundary whose relative
jump is at least tewatch's minimum effect, and `detect_regressions` at asv's default threshold (5 %),
what `asv publish` reports as regressions.

    .venv/bin/python scripts/django_steps.py [--data ../shared/data/ext-django-asv/django-ubuntu-latest.tar.xz]
"""

from __future__ import annotations

import argparse
import itertools
from pathlib import Path

import numpy as np
from asv import step_detect
from rich.console import Console
from rich.table import Table

from tewatch.detect.changepoint import detect_change_points
from tewatch.detect.config import ChangePointConfig
from tewatch.detect.version import DETECTOR_VERSION
from tewatch.ingest.archive_series import ArchiveSeries, archive_series

DATA = Path(__file__).resolve().parents[1].parent / "shared/data/ext-django-asv/django-ubuntu-latest.tar.xz"
ENV = "conda-py3.12"
SERIES = (
    "form_benchmarks.form_validate.benchmark.FormValidate.time_form_validate",
    "query_benchmarks.query_utils_q_create.benchmark.QCreate.time_create_small",
)
ASV_REGRESSION_THRESHOLD = 0.05


def tewatch_rows(series: ArchiveSeries) -> list[tuple[str, str, str, str]]:
    rows = []
    for cp in detect_change_points(series.values):
        rows.append(
            (
                f"{cp.index} {series.commits[cp.index][:8]}",
                f"{cp.effect:+.1%}",
                f"{cp.first_possible_index}-{cp.last_possible_index}",
                f"{cp.baseline:.3g} s -> {cp.level_after:.3g} s",
            )
        )
    return rows


def asv_step_rows(series: ArchiveSeries, threshold: float) -> list[tuple[str, str, str, str]]:
    data = [None if not np.isfinite(v) else float(v) for v in series.values]
    rows = []
    for before, after in itertools.pairwise(step_detect.detect_steps(data)):
        jump = after[2] / before[2] - 1.0
        if abs(jump) >= threshold:
            rows.append(
                (
                    f"{after[0]} {series.commits[after[0]][:8]}",
                    f"{jump:+.1%}",
                    f"{before[1] - 1}-{after[0]}",
                    f"{before[2]:.3g} s -> {after[2]:.3g} s",
                )
            )
    return rows


def asv_regression_rows(series: ArchiveSeries) -> list[tuple[str, str, str, str]]:
    data = [None if not np.isfinite(v) else float(v) for v in series.values]
    _, _, regressions = step_detect.detect_regressions(
        step_detect.detect_steps(data), ASV_REGRESSION_THRESHOLD
    )
    rows = []
    for before, after, value_before, best_after in regressions or []:
        rows.append(
            (
                f"{after} {series.commits[after][:8]}",
                f"{best_after / value_before - 1.0:+.1%}",
                f"{before}-{after}",
                f"{value_before:.3g} s -> {best_after:.3g} s",
            )
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", type=Path, default=DATA, help="the django-ubuntu-latest.tar.xz archive")
    args = parser.parse_args()
    min_effect = ChangePointConfig().min_effect
    console = Console(width=150)
    for name, series in archive_series(args.data, ENV, list(SERIES)).items():
        measured = int(np.isfinite(series.values).sum())
        table = Table(
            title=f"{name.rsplit('.', 2)[-2]}.{name.rsplit('.', 1)[-1]} ({ENV}): {measured} commits, "
            f"{series.commits[0][:8]}..{series.commits[-1][:8]}"
        )
        for column in ("detector", "change at (index, commit)", "effect", "range (indices)", "levels"):
            table.add_column(column)
        for label, rows in (
            ("tewatch", tewatch_rows(series)),
            (f"asv detect_steps, |jump| >= {min_effect:.0%}", asv_step_rows(series, min_effect)),
            (f"asv detect_regressions ({ASV_REGRESSION_THRESHOLD:.0%})", asv_regression_rows(series)),
        ):
            for i, row in enumerate(rows or [("(none)", "", "", "")]):
                table.add_row(label if i == 0 else "", *row, end_section=i == max(len(rows), 1) - 1)
        console.print(table)
    console.print(f"tewatch: {DETECTOR_VERSION}; asv: asv.step_detect of the installed asv")


if __name__ == "__main__":
    main()

"""`tewatch detect` (change points over the stored history) and `tewatch eval-detector` (the detector
scored on replayed H200 noise with injected steps, next to asv's own step detection)."""

from __future__ import annotations

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from tewatch.cli.app import app
from tewatch.cli.options import DatabaseOption, fail, settings_for


def _progress(console: Console) -> Progress:
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    )


@app.command("detect")
def detect_command(
    branch: str = typer.Option("main", "--branch", "-b", help="branch whose history to scan"),
    db: DatabaseOption = None,
) -> None:
    """Run change-point detection over every series of BRANCH; new regressions become alerts and
    regression.detected webhook events (delivered by the service or `tewatch webhooks deliver`). Each TE
    release on BRANCH is compared again with the release before it on the same machine."""
    from sqlalchemy.exc import OperationalError, ProgrammingError

    from tewatch.pipeline.branch_detection import detect_branch
    from tewatch.pipeline.release_steps import detect_branch_releases
    from tewatch.store.engine.contention import busy_reason
    from tewatch.store.engine.database import make_engine

    console = Console(stderr=True)
    settings = settings_for(db)
    engine = make_engine(settings.database_url)
    try:
        with _progress(console) as progress:
            task = progress.add_task(f"detecting on {branch}", total=None)
            summary = detect_branch(
                engine,
                branch,
                settings.public_url,
                progress_total=lambda n: progress.update(task, total=n),
                progress=lambda n: progress.advance(task, n),
            )
            progress.update(task, description=f"comparing the TE releases on {branch}", total=None)
            release_comparisons = detect_branch_releases(engine, branch)
    except (OperationalError, ProgrammingError) as exc:
        reason = busy_reason(exc)
        if reason:
            raise fail(f"the store is busy: detection waited for {reason}; run it again") from exc
        raise fail(f"cannot read the store ({exc.orig}); run `tewatch db upgrade` first?") from exc
    finally:
        engine.dispose()
    if summary.series == 0:
        raise fail(f"no results on branch {branch!r}")
    table = Table(title=f"detection on {branch}")
    table.add_column("what")
    table.add_column("count", justify="right")
    for label, value in (
        ("series scanned (incl. paired ratios)", summary.series),
        ("new change points", summary.change_points),
        ("  regressions", summary.new_regressions),
        ("  shared by most series of an environment (one alert each)", summary.environment_alerts),
        ("  improvements", summary.new_improvements),
        ("  environment shifts", summary.environment_shifts),
        ("withdrawn by later history", summary.withdrawn),
        ("regressions undone (series back at the earlier level)", summary.returned),
        ("alerts resolved", summary.resolved_alerts),
        ("series compared between TE releases", release_comparisons),
        ("webhook events queued", summary.events),
    ):
        table.add_row(label, str(value))
    Console().print(table)


@app.command("eval-detector")
def eval_detector_command(
    series: int = typer.Option(
        60, help="series per scenario (profile x step size x direction, plus no step)"
    ),
    commits: int = typer.Option(300, help="commits per series"),
    steps: str = typer.Option("0.03,0.05,0.10", help="relative step sizes to inject"),
    gaps: float = typer.Option(0.05, help="fraction of commits skipped (gaps)"),
    tolerance: int = typer.Option(5, help="a detection within this many commits of the step is a hit"),
    seed: int = typer.Option(20261129),
    asv: bool = typer.Option(True, "--asv/--no-asv", help="also score asv.step_detect on the same series"),
) -> None:
    """Replay series of measured H200 noise with injected steps, and changes of the shapes seen on
    django-asv's history (a huge jump onto a noisier level on the newest commits, a change in the share of
    slow runs); print recall, precision and false alarms per 1,000 series-commits for tewatch's detector
    and asv's step detection."""
    from tewatch.detect.config import ChangePointConfig
    from tewatch.detect.evaluation import asv_detector, evaluate, tewatch_detector
    from tewatch.detect.noise import H200_PROFILES
    from tewatch.detect.shapes import django_shapes

    try:
        step_sizes = [float(s) for s in steps.split(",") if s.strip()]
    except ValueError as exc:
        raise fail(f"--steps must be comma-separated numbers: {steps!r}") from exc
    if not step_sizes or any(not 0 < s < 1 for s in step_sizes):
        raise fail("--steps must be relative sizes between 0 and 1")
    config = ChangePointConfig()
    detectors = {"tewatch": tewatch_detector(config)}
    if asv:
        detectors["asv"] = asv_detector(config.min_effect)
    shapes = django_shapes(list(H200_PROFILES.values()))
    total = (len(H200_PROFILES) * (1 + 2 * len(step_sizes)) + len(shapes)) * series
    with _progress(Console(stderr=True)) as progress:
        task = progress.add_task("replaying", total=total)
        evaluation = evaluate(
            detectors,
            step_sizes=step_sizes,
            series_per_scenario=series,
            commits=commits,
            gap_fraction=gaps,
            tolerance=tolerance,
            seed=seed,
            progress=lambda n: progress.advance(task, n),
            shapes=shapes,
        )
    console = Console(width=140)
    console.print(evaluation_table(evaluation, list(detectors), tolerance))
    console.print(shapes_table(evaluation, list(detectors)))
    console.print(
        "FA/1k: detections matching no injected step per 1,000 series-commits; FA/1k no-step: those "
        "on series without a step; range: median commits in the reported range (bisection span)."
    )


def evaluation_table(evaluation, detectors: list[str], tolerance: int) -> Table:
    import numpy as np

    from tewatch.detect.evaluation import combined
    from tewatch.detect.noise import H200_PROFILES

    table = Table(
        title=f"{evaluation.series_per_scenario} series per scenario x {evaluation.commits} commits; "
        f"hit = within {tolerance} commits or inside the reported commit range"
    )
    table.add_column("detector")
    table.add_column("noise (across-process CV)")
    for size in evaluation.step_sizes:
        table.add_column(f"recall {size * 100:g}%", justify="right")
    for header in ("precision", "FA/1k", "FA/1k no-step", "range"):
        table.add_column(header, justify="right")
    for detector in detectors:
        rows = [
            (p.name + f" ({p.measured_across_cv * 100:.1f} %)", evaluation.scores[(detector, p.name)])
            for p in H200_PROFILES.values()
            if (detector, p.name) in evaluation.scores
        ]
        rows.append(("all", combined(evaluation, detector)))
        for label, score in rows:
            width = np.median(score.range_widths) if score.range_widths else float("nan")
            table.add_row(
                detector,
                label,
                *(f"{score.recall(s) * 100:.1f} %" for s in evaluation.step_sizes),
                f"{score.precision * 100:.1f} %",
                f"{score.false_alarms_per_1000:.2f}",
                f"{1000 * score.null_false_alarms / score.commits:.2f}",
                f"{width:.0f}",
                end_section=label == "all",
            )
    return table


def shapes_table(evaluation, detectors: list[str]) -> Table:
    import numpy as np

    table = Table(
        title=f"changes of other shapes (django-asv, python 3.12): {evaluation.series_per_scenario} "
        f"series each x {evaluation.commits} commits"
    )
    table.add_column("detector")
    table.add_column("shape")
    for header in ("recall", "precision", "FA/1k", "range"):
        table.add_column(header, justify="right")
    for detector in detectors:
        for shape in evaluation.shapes:
            score = evaluation.shape_scores[(detector, shape.name)]
            width = np.median(score.range_widths) if score.range_widths else float("nan")
            recall = f"{100 * score.hits / score.steps:.1f} %" if score.steps else "-"
            precision = f"{score.precision * 100:.1f} %" if shape.changes else "-"
            table.add_row(
                detector,
                shape.name,
                recall,
                precision,
                f"{score.false_alarms_per_1000:.2f}",
                f"{width:.0f}",
                end_section=shape is evaluation.shapes[-1],
            )
    return table

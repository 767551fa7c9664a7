"""A training case's loss curve over its reference's, with the band around the reference, as SVG: the
overlay the case page shows and the PR report's Training section links (docs/training-report.md)."""

from __future__ import annotations

import io
import math

from matplotlib.figure import Figure

from tewatch.pipeline.training import Overlay
from tewatch_dashboards.plots import COLOURS  # also sets matplotlib's rcParams: uploaded text is plain


def _values(losses: list[float | None]) -> list[float]:
    return [math.nan if v is None else v for v in losses]


def render_overlay_svg(found: Overlay, width: float = 10.0, height: float = 5.0) -> str:
    """Above, both losses and the band around the reference's; below, their difference and the band
    around zero, where a divergence of 1e-7 shows as plainly as one of 0.1."""
    figure = Figure(figsize=(width, height), layout="constrained")
    curves, differences = figure.subplots(2, 1, sharex=True, height_ratios=(3, 2))
    loss = _values(found.loss)
    steps = list(range(1, len(loss) + 1))
    if found.reference_loss:
        reference = _values(found.reference_loss)
        tolerance = found.tolerance
        low = [r - t for r, t in zip(reference, tolerance, strict=True)]
        high = [r + t for r, t in zip(reference, tolerance, strict=True)]
        curves.fill_between(steps, low, high, color=COLOURS["band"], alpha=0.25, linewidth=0, label="band")
        curves.plot(steps, reference, color=COLOURS["median"], linewidth=1.2, label=found.reference)
        differences.fill_between(
            steps, [-t for t in tolerance], tolerance, color=COLOURS["band"], alpha=0.25, linewidth=0
        )
        differences.plot(
            steps,
            [c - r for c, r in zip(loss, reference, strict=True)],
            color=COLOURS["pr"],
            marker=".",
            linewidth=1.2,
        )
        differences.axhline(0, color=COLOURS["median"], linewidth=0.8)
    curves.plot(steps, loss, color=COLOURS["pr"], linewidth=1.2, label=f"run {found.run_id}")
    step = found.comparison.first_divergent_step if found.comparison else None
    if step is not None:
        for axes in (curves, differences):
            axes.axvline(step, color=COLOURS["failure"], linestyle="--", linewidth=1)
        curves.plot([], [], color=COLOURS["failure"], linestyle="--", label=f"parts at step {step}")
    curves.set_ylabel("loss")
    curves.set_title(found.description or "no reference to compare against", fontsize=9, loc="left")
    curves.legend(loc="upper right", fontsize=8)
    differences.set_ylabel(f"run - {found.reference}" if found.reference else "")
    differences.set_xlabel("optimizer step")
    for axes in (curves, differences):
        axes.grid(alpha=0.3)
    buf = io.StringIO()
    figure.savefig(buf, format="svg", metadata={"Date": None})
    return buf.getvalue()

"""Series charts rendered by matplotlib to SVG: for pages without JavaScript, PR comments and static export.

Renders with the object-oriented API (no pyplot state), so concurrent requests do not share a figure.
"""

from __future__ import annotations

import io

import matplotlib
from matplotlib.figure import Figure

from tewatch_dashboards.render_cache import RenderCache
from tewatch_dashboards.series_chart import ChartData
from tewatch_dashboards.templating import BYTE_UNITS, byte_step

# text.parse_math off: every label is plain text, so a `$` in an uploaded version or name is drawn as
# written instead of reaching mathtext (whose parse errors would fail the whole figure)
matplotlib.rcParams.update(
    {"svg.fonttype": "none", "svg.hashsalt": "tewatch", "font.size": 9, "text.parse_math": False}
)

COLOURS = {
    "sample": "#7aa6d8",
    "median": "#1d2433",
    "band": "#76b900",
    "regression": "#b54708",
    "improvement": "#1849a9",
    "shift": "#6b4fbb",
    "failure": "#b42318",
    "pr": "#d6336c",
}


def display_scale(unit: str, values: list[float]) -> tuple[float, str]:
    """A factor and a unit label that keep seconds (ms, µs) and bytes (MiB, GiB) readable."""
    if unit in BYTE_UNITS and values:
        scale, name = byte_step(max(abs(v) for v in values))
        return 1 / scale, name + BYTE_UNITS[unit]
    if unit != "seconds" or not values:
        return 1.0, {"fraction": "share"}.get(unit, unit)
    typical = sorted(values)[len(values) // 2]
    for factor, label in ((1.0, "s"), (1e3, "ms"), (1e6, "µs")):
        if typical * factor >= 1:
            return factor, label
    return 1e9, "ns"


MAX_COMMIT_TICKS = 16
HORIZONTAL_TICKS = 8  # more commit labels than this are written on one slanted line each


def commit_ticks(chart: ChartData) -> list[tuple[float, str]]:
    """(x, label) of the commits the axis names: every drawn point's (each bucket's first), thinned evenly to
    MAX_COMMIT_TICKS keeping the newest, and every PR head point's."""
    if chart.points:
        history = [
            (float(chart.offset + i), chart.commits.get(chart.offset + i, p.sha[:7]))
            for i, p in enumerate(chart.points)
        ]
    else:
        history = [
            (b.x, chart.commits.get(round(b.x - (b.n - 1) / 2), b.first_sha[:7])) for b in chart.buckets
        ]
    pr = (
        [
            (float(chart.pr.x0 + i), "PR " + chart.commits.get(chart.pr.x0 + i, p.sha[:7]))
            for i, p in enumerate(chart.pr.points)
        ]
        if chart.pr
        else []
    )
    room = max(MAX_COMMIT_TICKS - len(pr), 2)
    if len(history) > room:
        step = (len(history) - 1) / (room - 1)
        history = [history[round(len(history) - 1 - k * step)] for k in reversed(range(room))]
        if pr:  # the newest history label would print over the first PR label
            history = [t for t in history if pr[0][0] - t[0] >= step * 0.75] or history[:1]
    return history + pr


def tolerance_segments(line: list[tuple[float, float]]) -> list[tuple[float, float, float]]:
    """(first x, last x, tolerance) of each stretch of drawn points that share one tolerance."""
    segments: list[tuple[float, float, float]] = []
    for x, tolerance in line:
        if segments and segments[-1][2] == tolerance:
            segments[-1] = (segments[-1][0], x, tolerance)
        else:
            segments.append((x, x, tolerance))
    return segments


def draw_series(
    chart: ChartData, width: float = 10.0, height: float = 3.6, log_scale: bool = False
) -> Figure:
    """The chart as a matplotlib figure (render_series_svg writes it out); `log_scale`: a logarithmic value
    axis, where a jump of 100 times leaves the history before it readable."""
    fig = Figure(figsize=(width, height), layout="constrained")
    ax = fig.add_subplot()
    values = [p.value for p in chart.points if p.value is not None] or [
        b.median for b in chart.buckets if b.median is not None
    ]
    pr_points = chart.pr.points if chart.pr else []
    values = values or [p.value for p in pr_points if p.value is not None]
    scale, unit_label = display_scale(chart.header.unit, values)

    for seg in chart.band:
        ax.fill_between(
            [seg.x0, seg.x1],
            seg.lower * scale,
            seg.upper * scale,
            color=COLOURS["band"],
            alpha=0.13,
            linewidth=0,
        )
        ax.plot(
            [seg.x0, seg.x1], [seg.baseline * scale] * 2, color=COLOURS["band"], linewidth=1, linestyle="--"
        )

    if chart.points:
        xs = [chart.offset + i for i in range(len(chart.points))]
        sx = [x for x, p in zip(xs, chart.points, strict=True) for _ in p.samples]
        sy = [s * scale for p in chart.points for s in p.samples]
        ax.scatter(sx, sy, s=4, color=COLOURS["sample"], alpha=0.55, linewidths=0, label="samples")
        mx = [x for x, p in zip(xs, chart.points, strict=True) if p.value is not None]
        my = [p.value * scale for p in chart.points if p.value is not None]
        ax.plot(mx, my, color=COLOURS["median"], linewidth=1.1, marker="o", markersize=2.2, label="median")
        # a failed verdict is marked at its point's value; one without a value, at the foot of the axes
        failed = [
            (x, p)
            for x, p in zip(xs, chart.points, strict=True)
            if p.verdict not in (None, "pass", "unsupported")
        ]
        timed = [(x, p.value * scale) for x, p in failed if p.value is not None]
        untimed = [x for x, p in failed if p.value is None]
        if timed:
            ax.scatter(
                [x for x, _ in timed],
                [y for _, y in timed],
                marker="x",
                color=COLOURS["failure"],
                s=22,
                zorder=3,
                label="failed verdict",
            )
        if untimed:
            ax.scatter(
                untimed,
                [0.03] * len(untimed),
                marker="x",
                color=COLOURS["failure"],
                s=22,
                zorder=3,
                transform=ax.get_xaxis_transform(),
                clip_on=False,
                label="failed verdict, no result" if timed else "failed verdict (no result)",
            )
    elif chart.buckets:
        drawn = [
            (b.x, b.low, b.median, b.high)
            for b in chart.buckets
            if b.low is not None and b.median is not None and b.high is not None
        ]  # a bucket of failed results alone has none of them
        bx = [x for x, _, _, _ in drawn]
        ax.fill_between(
            bx,
            [low * scale for _, low, _, _ in drawn],
            [high * scale for _, _, _, high in drawn],
            color=COLOURS["sample"],
            alpha=0.35,
            linewidth=0,
            label="spread (q25–q75 range)",
        )
        ax.plot(
            bx,
            [median * scale for _, _, median, _ in drawn],
            color=COLOURS["median"],
            linewidth=1.1,
            label="median",
        )

    if chart.pr and pr_points:
        pr = chart.pr
        xs = [pr.x0 + i for i in range(len(pr_points))]
        ax.axvline(pr.x0 - 0.5, color=COLOURS["pr"], linewidth=1, linestyle="--")
        ax.scatter(
            [x for x, p in zip(xs, pr_points, strict=True) for _ in p.samples],
            [s * scale for p in pr_points for s in p.samples],
            s=6,
            color=COLOURS["pr"],
            alpha=0.55,
            linewidths=0,
            label=f"PR #{pr.number} samples",
        )
        mx = [x for x, p in zip(xs, pr_points, strict=True) if p.value is not None]
        ax.plot(
            mx,
            [p.value * scale for p in pr_points if p.value is not None],
            color=COLOURS["pr"],
            linewidth=1.1,
            marker="D",
            markersize=3,
            label=f"PR #{pr.number} median",
        )
        base = (pr.comparison or {}).get("baseline")
        if base is not None:
            ax.plot(
                [pr.x0 - 0.4, xs[-1] + 0.4],
                [base * scale] * 2,
                color=COLOURS["pr"],
                linewidth=1,
                linestyle=":",
                label="PR merge-base median",
            )

    for i, (x0, x1, tolerance) in enumerate(tolerance_segments(chart.tolerance)):
        ax.hlines(
            tolerance * scale,
            x0 - 0.5,
            x1 + 0.5,
            color=COLOURS["failure"],
            linewidth=1.2,
            linestyles="--",
            label="tolerance of its check" if i == 0 else "_",  # "_": left out of the legend
        )
    for cp in chart.change_points:
        ax.axvline(cp.x - 0.5, color=COLOURS[cp.direction], linewidth=1.4)
        ax.annotate(
            f"{cp.effect * 100:+.1f} %",
            (cp.x - 0.5, 1),
            xycoords=("data", "axes fraction"),
            xytext=(3, -10),
            textcoords="offset points",
            color=COLOURS[cp.direction],
            fontweight="bold",
        )
    for shift in chart.shifts:
        ax.axvline(shift.x - 0.5, color=COLOURS["shift"], linewidth=1, linestyle=":")
        ax.annotate(
            shift.label,
            (shift.x - 0.5, 0),
            xycoords=("data", "axes fraction"),
            xytext=(3, 4),
            textcoords="offset points",
            color=COLOURS["shift"],
            fontsize=7,
            rotation=90,
            va="bottom",
        )

    ticks = commit_ticks(chart)
    if ticks:
        slanted = len(ticks) > HORIZONTAL_TICKS
        ax.set_xticks(
            [x for x, _ in ticks],
            [label.replace("\n", " · ") if slanted else label for _, label in ticks],
            rotation=30 if slanted else 0,
            ha="right" if slanted else "center",
            rotation_mode="anchor",
            fontsize=7.5,
        )
        ax.set_xlim(min(x for x, _ in ticks) - 0.5, max(x for x, _ in ticks) + 0.5)
    h = chart.header
    ax.set_title(f"{h.benchmark} · {h.gpu_model}", loc="left", fontsize=10, fontweight="bold")
    ax.set_xlabel("commit (oldest → newest)")
    # a series with nothing above zero to draw (no timing yet, or failures alone) has no log axis
    log_scale = log_scale and any(v > 0 for v in values)
    ax.set_ylabel(f"{unit_label} (log scale)" if log_scale else unit_label)
    if log_scale:
        ax.set_yscale("log")
    ax.grid(True, color="#e3e6eb", linewidth=0.6)
    ax.spines[["top", "right"]].set_visible(False)
    if values:
        ax.legend(loc="upper left", frameon=False, fontsize=7, ncols=4)
    return fig


def render_series_svg(
    chart: ChartData, width: float = 10.0, height: float = 3.6, log_scale: bool = False
) -> str:
    buf = io.StringIO()
    draw_series(chart, width, height, log_scale).savefig(buf, format="svg", metadata={"Date": None})
    return buf.getvalue()


svg_cache = RenderCache()

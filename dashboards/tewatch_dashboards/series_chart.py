"""What a series chart shows, computed on the server: points (or buckets on a long history), change points,
the baseline band and environment shifts. The same object feeds the interactive chart (as JSON) and the
matplotlib SVG, so both tell the same story.

The x axis is the position along the commit axis (commit time, then run order); it stays the position in
the full history when buckets are drawn, so change points and shifts land in the same place either way.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import asdict, dataclass, field
from typing import Any

from sqlalchemy import Connection

from tewatch.detect.drift import ErrorMetric
from tewatch.detect.environment import environment_changes
from tewatch.pipeline.memory_numerics import tolerance_of
from tewatch.store.reads.case_metric_reads import run_checks
from tewatch.store.reads.machine_reads import environments_by_id, machines_by_id
from tewatch.store.reads.release_reads import SeriesStep, series_steps
from tewatch.store.reads.series_reads import (
    SeriesHeader,
    SeriesPoint,
    pr_comparison,
    series_points,
    series_version,
)
from tewatch_dashboards.templating import is_version_stand_in
from tewatch_dashboards.views.change_points import MIN_EFFECT, ChangePointView, change_points

MAX_DETAILED_POINTS = 600  # beyond this, the server aggregates points into buckets
MAX_SAMPLES_DRAWN = 32  # of each point, evenly thinned: the SVG and the JSON draw the same
DEFAULT_LAST = 300
# error values drawn on a log axis, where they span a decade or more (dB are logarithmic already)
LOG_WORTHY_UNITS = ("abs error", "rel error")
SCALES = ("auto", "linear", "log")
SHIFT_NAMES = {"te_version": "TE", "cuda": "CUDA", "cudnn": "cuDNN", "cublaslt": "cuBLASLt"}


@dataclass
class Bucket:
    x: float
    first_run: int
    last_run: int
    first_sha: str
    last_sha: str
    n: int
    low: float | None
    median: float | None
    high: float | None
    failures: int
    first_commit: str = ""  # the first and last run's commits as the tooltips name them (commit_label)
    last_commit: str = ""


@dataclass
class Shift:
    x: int
    label: str


@dataclass
class BandSegment:
    x0: int
    x1: int
    lower: float
    baseline: float
    upper: float


@dataclass
class PrOverlay:
    """A pull request's head runs of the series, drawn after the history (from x = total on), and its stored
    comparison against the merge base (None until detection made one)."""

    number: int
    x0: int
    points: list[SeriesPoint] = field(default_factory=list)
    comparison: dict | None = None


COMPARISON_FIELDS = (
    "verdict",
    "baseline",
    "head",
    "effect",
    "ci_low",
    "ci_high",
    "p_value",
    "q_value",
    "n_base",
    "n_head",
    "between_run_sigma",
    "noise_source",
    "min_effect",
    "head_run_id",
    "base_run_ids",
)


@dataclass
class ChartData:
    header: SeriesHeader
    total: int  # results of the series under this branch filter
    offset: int  # position of the first drawn point in the full history
    points: list[SeriesPoint] = field(default_factory=list)  # when drawn in detail
    buckets: list[Bucket] = field(default_factory=list)  # when aggregated
    change_points: list[ChangePointView] = field(default_factory=list)
    band: list[BandSegment] = field(default_factory=list)
    shifts: list[Shift] = field(default_factory=list)
    versions: dict[int, dict] = field(default_factory=dict)  # x -> stack versions at shift points
    pr: PrOverlay | None = None
    commits: dict[int, str] = field(
        default_factory=dict
    )  # x -> the commit there, for axis labels (commit_label)
    point_commits: dict[int, str] = field(default_factory=dict)  # run id -> its commit on one line
    # (x, tolerance) of an error metric's points whose check held the value to a tolerance
    tolerance: list[tuple[float, float]] = field(default_factory=list)

    @property
    def aggregated(self) -> bool:
        return bool(self.buckets)

    def drawn_values(self) -> list[float]:
        """The values the chart draws: the points' (or the buckets' medians), then the PR head's."""
        drawn = [p.value for p in self.points] + [b.median for b in self.buckets]
        drawn += [p.value for p in self.pr.points] if self.pr else []
        return [v for v in drawn if v is not None and math.isfinite(v)]

    def scale(self, requested: str) -> str:
        """`linear` or `log`; `auto` is log for an error value (max-abs, rel-L2) whose drawn values and
        tolerance are all above 0 and span a decade or more, else linear."""
        if requested != "auto":
            return requested
        if self.header.unit not in LOG_WORTHY_UNITS:
            return "linear"
        values = self.drawn_values() + [t for _, t in self.tolerance]
        if not values or min(values) <= 0:
            return "linear"
        return "log" if max(values) / min(values) >= 10 else "linear"

    def as_json(self, scale: str = "auto") -> dict:
        h = self.header
        out = {
            "series": {
                "id": h.series_id,
                "benchmark": h.benchmark,
                "unit": h.unit,
                "higher_is_better": h.higher_is_better,
                "case_id": h.case_id,
                "gpu": h.gpu_model,
            },
            "total": self.total,
            "offset": self.offset,
            "aggregated": self.aggregated,
            "points": [
                _point_json(self.offset + i, p, self.point_commits.get(p.run_id, ""))
                for i, p in enumerate(self.points)
            ],
            "buckets": [asdict(b) for b in self.buckets],
            "change_points": [asdict(c) for c in self.change_points],
            "band": [asdict(b) for b in self.band],
            "shifts": [asdict(s) for s in self.shifts],
            "labels": self.commits,
            "tolerance": self.tolerance,
            "scale": self.scale(scale),
        }
        if self.pr is not None:
            out["pr"] = {
                "number": self.pr.number,
                "points": [
                    _point_json(self.pr.x0 + i, p, self.point_commits.get(p.run_id, ""))
                    for i, p in enumerate(self.pr.points)
                ],
                "comparison": self.pr.comparison,
            }
        return out


def _point_json(x: int, p: SeriesPoint, commit: str) -> dict:
    return {
        "x": x,
        "run": p.run_id,
        "sha": p.sha,
        "commit": commit or p.sha[:7],
        "at": p.at.isoformat() if p.at else None,
        "status": p.status,
        "value": p.value,
        "q25": p.q_25,
        "q75": p.q_75,
        "samples": p.samples,
        "verdict": p.verdict,
        "exception": p.exception_class,
        "gpu": gpu_summary(p.gpu_state),
    }


def gpu_summary(state: dict) -> dict:
    """The GPU state worth a tooltip: first/last clocks, power, temperature, throttle reasons; only what was
    recorded (cases that time nothing on the GPU, like the contracts, record empty lists: {})."""
    out: dict[str, list[Any]] = {}
    for key in ("sm_clock_mhz", "mem_clock_mhz", "power_w", "temperature_c"):
        values = state.get(key)
        if isinstance(values, list) and values:
            nums = [v for v in values if isinstance(v, (int, float))]
            if nums:
                out[key] = [min(nums), max(nums)]
    reasons = state.get("throttle_reasons")
    if isinstance(reasons, list) and reasons:
        out["throttle_reasons"] = [str(r) for r in reasons[:6]]
    return out


def build(
    conn: Connection,
    header: SeriesHeader,
    branch: str = "",
    last: int | None = DEFAULT_LAST,
    pr: int | None = None,
) -> ChartData:
    total = series_version(conn, header.series_id, branch)[0]
    detailed = (last is not None and last <= MAX_DETAILED_POINTS) or total <= MAX_DETAILED_POINTS
    points = series_points(
        conn, header, branch, last=last, with_samples=detailed, samples_per_point=MAX_SAMPLES_DRAWN
    )
    offset = total - len(points)
    chart = ChartData(header=header, total=total, offset=offset)
    bucket_size = 1 if detailed else math.ceil(len(points) / MAX_DETAILED_POINTS)
    if detailed:
        chart.points = points
    else:
        chart.buckets = aggregate(points, offset, bucket_size)
    if pr is not None:
        chart.pr = pr_overlay(conn, header, pr, total)
    pr_points = chart.pr.points if chart.pr else []
    envs = environments_by_id(conn, {p.environment_id for p in points + pr_points})
    machines = machines_by_id(conn, {p.machine_id for p in points + pr_points})
    chart.shifts = environment_shifts(points, offset, envs, machines)
    chart.commits = commit_labels(
        points, offset, envs, every=bucket_size
    )  # buckets are labelled at their start
    if chart.pr:
        chart.commits.update(commit_labels(pr_points, chart.pr.x0, envs))
    for p in points + pr_points:
        env = envs.get(p.environment_id)
        chart.point_commits[p.run_id] = commit_label(p.sha, env.te_version if env else "").replace(
            "\n", " · "
        )
    for b in chart.buckets:
        b.first_commit, b.last_commit = chart.point_commits[b.first_run], chart.point_commits[b.last_run]
    values = [p.value if p.status == "ok" else None for p in points]
    found = change_points(conn, header, points, values, offset, branch)
    steps = [s for s in series_steps(conn, [header.series_id]) if not branch or s.branch == branch]
    chart.change_points = with_release_steps(found, steps, points, offset, chart.point_commits)
    chart.band = baseline_band(values, chart.change_points, offset)
    if (metric := ErrorMetric.parse(header.benchmark.rpartition(".")[2])) is not None:
        chart.tolerance = tolerance_line(conn, header, metric, drawn_runs(chart, points, bucket_size))
    return chart


def drawn_runs(
    chart: ChartData, points: list[SeriesPoint], bucket_size: int
) -> list[tuple[float, SeriesPoint]]:
    """(x, point) of each point drawn, of each bucket its newest point; then the PR head's."""
    if chart.buckets:
        drawn = [
            (b.x, points[min(i * bucket_size + b.n - 1, len(points) - 1)])
            for i, b in enumerate(chart.buckets)
        ]
    else:
        drawn = [(float(chart.offset + i), p) for i, p in enumerate(chart.points)]
    if chart.pr:
        drawn += [(float(chart.pr.x0 + i), p) for i, p in enumerate(chart.pr.points)]
    return drawn


def tolerance_line(
    conn: Connection, header: SeriesHeader, metric: ErrorMetric, drawn: list[tuple[float, SeriesPoint]]
) -> list[tuple[float, float]]:
    """(x, tolerance) where the case's verdict of the point's run held this value to a tolerance: the
    check of the metric's kind that found the same value (tolerance_of). At most one verdict per drawn
    point is read (600 buckets or points, and the PR's)."""
    checks = run_checks(conn, header.case_id, sorted({p.run_id for _, p in drawn}))
    line = []
    for x, p in drawn:
        if p.value is None or p.run_id not in checks:
            continue
        found = [(c.metric, c.value, c.tolerance) for c in checks[p.run_id]]
        if (tolerance := tolerance_of(metric, p.value, found)) is not None:
            line.append((x, tolerance))
    return line


def with_release_steps(
    found: list[ChangePointView],
    steps: list[SeriesStep],
    points: list[SeriesPoint],
    offset: int,
    commits: dict[int, str],
) -> list[ChangePointView]:
    """The change points, and each release step the comparer called a regression or an improvement where
    none was found: a level of its own from the release's first run on (one run per release is too few
    points for the change-point detector)."""
    position = {p.run_id: i for i, p in enumerate(points)}
    taken = {cp.x for cp in found}
    out = list(found)
    for step in steps:
        c = step.comparison
        i = position.get(c.head_run_id)
        if c.verdict not in ("regression", "improvement") or i is None or offset + i in taken:
            continue
        if c.baseline is None or c.head is None or c.baseline <= 0:
            continue
        before = [position[r] for r in c.base_run_ids if r in position and position[r] < i]
        out.append(
            ChangePointView(
                x=offset + i,
                before_x=offset + (max(before) if before else max(i - 1, 0)),
                run_id=c.head_run_id,
                sha=points[i].sha,
                baseline=c.baseline,
                level_after=c.head,
                lower=c.baseline / (1 + c.min_effect),
                upper=c.baseline * (1 + c.min_effect),
                effect=c.effect if c.effect is not None else c.head / c.baseline - 1,
                direction=c.verdict,
                source=f"release step TE {step.base_version} → {step.head_version}",
                commit=commits.get(c.head_run_id, ""),
            )
        )
        taken.add(offset + i)
    for cp in out:
        if not cp.commit:
            cp.commit = commits.get(cp.run_id, "")
    return sorted(out, key=lambda cp: cp.x)


def commit_label(sha: str, te_version: str) -> str:
    """A commit as people know it: its short sha, above TE's version where the run recorded one; only the
    version where the sha is the stand-in `tewatch run` files a release wheel without a commit under."""
    if is_version_stand_in(sha, te_version):
        return f"TE {te_version}"
    return f"{sha[:7]}\nTE {te_version}" if te_version else sha[:7]


def commit_labels(points: list[SeriesPoint], x0: int, envs: dict, every: int = 1) -> dict[int, str]:
    """x -> label of every `every`-th point from the first."""
    labels = {}
    for i in range(0, len(points), every):
        p = points[i]
        env = envs.get(p.environment_id)
        labels[x0 + i] = commit_label(p.sha, env.te_version if env else "")
    return labels


def pr_overlay(conn: Connection, header: SeriesHeader, pr: int, x0: int) -> PrOverlay:
    comparison = pr_comparison(conn, header.series_id, pr)
    return PrOverlay(
        number=pr,
        x0=x0,
        points=series_points(
            conn, header, pr=pr, last=MAX_DETAILED_POINTS, samples_per_point=MAX_SAMPLES_DRAWN
        ),
        comparison={name: getattr(comparison, name) for name in COMPARISON_FIELDS} if comparison else None,
    )


def aggregate(points: list[SeriesPoint], offset: int, size: int) -> list[Bucket]:
    buckets = []
    for start in range(0, len(points), size):
        chunk = points[start : start + size]
        values = [p.value for p in chunk if p.value is not None]
        low = [p.q_25 if p.q_25 is not None else p.value for p in chunk if p.value is not None]
        high = [p.q_75 if p.q_75 is not None else p.value for p in chunk if p.value is not None]
        buckets.append(
            Bucket(
                x=offset + start + (len(chunk) - 1) / 2,
                first_run=chunk[0].run_id,
                last_run=chunk[-1].run_id,
                first_sha=chunk[0].sha,
                last_sha=chunk[-1].sha,
                n=len(chunk),
                low=min(low) if low else None,
                median=statistics.median(values) if values else None,
                high=max(high) if high else None,
                failures=sum(1 for p in chunk if p.verdict not in (None, "pass", "unsupported")),
            )
        )
    return buckets


def environment_shifts(points: list[SeriesPoint], offset: int, envs: dict, machines: dict) -> list[Shift]:
    """Points where the driver, CUDA, cuBLASLt, cuDNN, torch or TE changed from the previous point (`envs` and
    `machines` by id: machine_reads)."""
    if not points:
        return []
    stacks: dict[tuple[int, int], dict[str, str]] = {}

    def stack(p: SeriesPoint) -> dict[str, str]:
        key = (p.environment_id, p.machine_id)
        if key not in stacks:
            e, m = envs.get(p.environment_id), machines.get(p.machine_id)
            stacks[key] = {
                "driver": m.driver if m else "",
                "cuda": m.cuda if m else "",
                "cublaslt": m.cublaslt if m else "",
                "cudnn": m.cudnn if m else "",
                "torch": e.torch if e else "",
                "te_version": e.te_version if e else "",
            }
        return stacks[key]

    shifts = []
    for i in range(1, len(points)):
        before, after = points[i - 1], points[i]
        if (before.environment_id, before.machine_id) == (after.environment_id, after.machine_id):
            continue
        changes = environment_changes(stack(before), stack(after))
        if changes:
            label = ", ".join(f"{SHIFT_NAMES.get(k, k)} {old} → {new}" for k, (old, new) in changes.items())
            shifts.append(Shift(offset + i, label))
    return shifts


def baseline_band(values: list[float | None], cps: list[ChangePointView], offset: int) -> list[BandSegment]:
    """The level each segment between change points was judged against, with its limits."""
    finite = [v for v in values if v is not None and v > 0]
    if not finite:
        return []
    end = offset + len(values) - 1
    if not cps:
        baseline = statistics.median(finite)
        margin = MIN_EFFECT
        return [BandSegment(offset, end, baseline / (1 + margin), baseline, baseline * (1 + margin))]
    segments = []
    start = offset
    for cp in cps:
        segments.append(BandSegment(start, cp.before_x, cp.lower, cp.baseline, cp.upper))
        start = cp.x
    last = cps[-1]
    up, down = last.upper / last.baseline, last.lower / last.baseline
    segments.append(BandSegment(start, end, last.level_after * down, last.level_after, last.level_after * up))
    return segments

"""The matplotlib chart of a series (/series/{id}/plot.svg): commits on the x axis, failures at their values."""

from __future__ import annotations

import hashlib
import itertools
from datetime import UTC, datetime

from tewatch.runner.commit import version_hash
from tewatch.store.reads.series_reads import SeriesHeader, SeriesPoint
from tewatch_dashboards.plots import MAX_COMMIT_TICKS, commit_ticks, draw_series, render_series_svg
from tewatch_dashboards.series_chart import ChartData, PrOverlay, commit_label

HEADER = SeriesHeader(
    series_id=1,
    benchmark="contracts.CheckpointParity.track_seconds",
    unit="seconds",
    higher_is_better=False,
    case_id=1,
    case_name="contracts.CheckpointParity",
    params={},
    gpu_model="NVIDIA H200",
    compute_capability="9.0",
    backend="te",
    recipe="nvfp4",
)


def sha_of(i: int) -> str:
    return hashlib.sha1(f"commit {i}".encode()).hexdigest()


def point(i: int, value: float | None, verdict: str = "pass", sha: str = "") -> SeriesPoint:
    return SeriesPoint(
        run_id=i + 1,
        sha=sha or sha_of(i),
        at=datetime(2026, 11, 30, tzinfo=UTC),
        status="ok" if value is not None else "failed",
        value=value,
        q_25=value,
        q_75=value,
        samples=[value] if value is not None else [],
        verdict=verdict,
        exception_class=None,
        environment_id=1,
        machine_id=1,
        gpu_state={},
    )


def chart_of(points: list[SeriesPoint], te_version: str = "") -> ChartData:
    chart = ChartData(header=HEADER, total=len(points), offset=0, points=points)
    chart.commits = {i: commit_label(p.sha, te_version) for i, p in enumerate(points)}
    return chart


def test_commit_labels_name_the_sha_and_the_te_version() -> None:
    assert commit_label("73f2a52ebdd8ab917b7751c32817d8ecd5960eff", "") == "73f2a52"
    assert commit_label("73f2a52ebdd8ab917b7751c32817d8ecd5960eff", "2.20.2") == "73f2a52\nTE 2.20.2"
    # a release wheel without a commit is filed under a hash of its version: the version is its name
    assert commit_label(version_hash("2.20.2"), "2.20.2") == "TE 2.20.2"


def test_the_x_axis_names_the_commits() -> None:
    points = [point(0, 0.050, sha=version_hash("2.20.2")), point(1, 0.045), point(2, 0.053)]
    ax = draw_series(chart_of(points, "2.20.2")).axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == [
        "TE 2.20.2",
        f"{sha_of(1)[:7]}\nTE 2.20.2",
        f"{sha_of(2)[:7]}\nTE 2.20.2",
    ]
    assert list(ax.get_xticks()) == [0, 1, 2]
    assert ax.get_xlabel() == "commit (oldest → newest)"
    svg = render_series_svg(chart_of(points, "2.20.2"))
    assert sha_of(1)[:7] in svg and "TE 2.20.2" in svg and "position along" not in svg


def test_a_long_history_names_evenly_spaced_commits_with_the_newest_and_the_pull_requests() -> None:
    chart = chart_of([point(i, 0.05) for i in range(300)])
    chart.pr = PrOverlay(number=7, x0=300, points=[point(1000, 0.06)])
    chart.commits[300] = commit_label(sha_of(1000), "")
    ticks = commit_ticks(chart)
    assert len(ticks) <= MAX_COMMIT_TICKS
    assert ticks[0] == (0.0, sha_of(0)[:7])
    assert ticks[-1] == (300.0, f"PR {sha_of(1000)[:7]}")
    gaps = [b[0] - a[0] for a, b in itertools.pairwise(ticks)]
    assert min(gaps) >= 0.75 * max(gaps[:-1]) > 1, "labels would print over each other"
    labels = [t.get_text() for t in draw_series(chart).axes[0].get_xticklabels()]
    assert labels == [label for _, label in ticks]


def test_failed_verdicts_are_marked_at_their_own_values() -> None:
    values = [0.0500, 0.0453, 0.0529, 0.0707, None, 0.0467]
    points = [point(i, v, "fail_accuracy" if v is not None else "error") for i, v in enumerate(values)]
    points[1] = point(1, values[1])
    ax = draw_series(chart_of(points)).axes[0]
    collections = {c.get_label(): c for c in ax.collections}
    timed = collections["failed verdict"].get_offsets()
    expected = [(i, v * 1e3) for i, v in enumerate(values) if v is not None and i != 1]
    assert [(round(x), round(y, 6)) for x, y in timed.tolist()] == [(x, round(y, 6)) for x, y in expected]
    untimed = collections["failed verdict, no result"]
    assert untimed.get_offsets().tolist() == [[4, 0.03]]
    assert untimed.get_offset_transform() == ax.get_xaxis_transform(), "drawn at the foot of the axes"

"""`tewatch demo` (what the quickstart serves, here without the CPU suite run, which tests/suites covers):
the bundled real H200 runs land in a fresh store and the dashboard serves them; docs/analysis.md's pandas
example, run as written against it, answers what the text under it says and draws the plot docs/ keeps."""

import contextlib
import io
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import httpx
import matplotlib
import pytest

from tewatch.campaign.demo import DISTRIBUTED_HISTORY, RELEASE_HISTORY, TE_REPO
from tewatch.campaign.release_history import release_runs
from tewatch.campaign.service_process import free_port

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("demo")
    port = free_port()
    log = (tmp / "demo.log").open("w+")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tewatch",
            "demo",
            "--no-run-suites",
            "--port",
            str(port),
            "--project",
            str(ROOT),
            "--db",
            f"sqlite:///{tmp / 'demo.sqlite3'}",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=dict(os.environ, COLUMNS="200"),
        text=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            assert proc.poll() is None, Path(log.name).read_text()[-3000:]
            try:
                if httpx.get(f"{url}/api/v1/health", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.5)
        else:
            pytest.fail("the demo did not answer within 180 s: " + Path(log.name).read_text()[-3000:])
        yield url, Path(log.name)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()


RELEASES = release_runs(ROOT / RELEASE_HISTORY)
BUNDLED_RUNS = len(RELEASES) + len(DISTRIBUTED_HISTORY)


def test_every_bundled_folder_is_loaded_in_release_order_and_the_url_is_printed(demo) -> None:
    url, log = demo
    text = " ".join(log.read_text().split())
    loaded = [
        f"TE {r.version} on an H200: 1 runs (1 new) from {r.folder}, commit {r.commit[:10]}" for r in RELEASES
    ]
    assert all(line in text for line in loaded)
    assert [text.index(line) for line in loaded] == sorted(text.index(line) for line in loaded)
    for folder in DISTRIBUTED_HISTORY:
        assert f"TE 2.20.2 on two H200s: 1 runs (1 new) from {ROOT / folder}" in text
    steps = ["TE 2.18.0 -> 2.19.0 on vm-h200: ", "TE 2.19.0 -> 2.20.2 on vm-h200: "]
    assert all(step in text for step in steps) and text.index(steps[0]) < text.index(steps[1])
    assert "largest +951%: checks.CpuOps.track_seconds" in text
    assert f"every step: {url}/releases" in text
    assert f"dashboard: {url}/" in text
    assert f"{url}/pr/1" in text and f"{url}/alerts" in text and "correctness" in text


def test_the_dashboard_shows_the_h200_runs_and_their_verdicts(demo) -> None:
    url, _ = demo
    runs = httpx.get(f"{url}/api/v1/runs", timeout=30).json()
    items = runs["items"] if isinstance(runs, dict) else runs
    assert len(items) == BUNDLED_RUNS + 2  # and the campaign's base and head
    matrix = httpx.get(f"{url}/matrix", timeout=30)
    assert matrix.status_code == 200 and "NVIDIA H200" in matrix.text
    # te.Linear under torch.compile from the quick profile, world sizes 1 and 2 from the 2-GPU run
    assert '<option value="nvfp4-ref" >nvfp4-ref</option>' in matrix.text
    assert '<option value="2" >2</option>' in matrix.text


def test_the_demo_opens_the_alerts_an_upload_stream_would_and_holds_a_pull_request(demo) -> None:
    url, _ = demo
    alerts = httpx.get(f"{url}/api/v1/alerts", params={"status": "open"}, timeout=30).json()
    items = alerts["items"] if isinstance(alerts, dict) else alerts
    assert any(a["kind"] == "correctness" for a in items)
    comparisons = httpx.get(f"{url}/api/v1/prs/1/comparisons", timeout=30).json()
    assert comparisons and {c["rounds"] for c in comparisons} >= {2}
    assert sum(c["verdict"] == "regression" for c in comparisons) >= 23
    page = httpx.get(f"{url}/pr/1", timeout=30)
    assert page.status_code == 200


def test_the_h200_runs_are_filed_under_te_s_repository(demo) -> None:
    url, _ = demo
    every = httpx.get(f"{url}/runs", timeout=30).text
    filed = httpx.get(f"{url}/runs", params={"repo": TE_REPO}, timeout=30).text
    total = BUNDLED_RUNS + 2
    assert f"{total} uploaded runs" in every and f"{total} uploaded runs" in filed
    assert filed.count(f'<div class="muted" data-role="repo">{TE_REPO}</div>') == total


ANALYSIS = ROOT / "docs" / "analysis.md"
PLOT = "docs/compiled-eager-ratio.png"
MARKER = "<!-- this block runs in tests/campaign/test_demo.py"


def analysis_example() -> str:
    text = ANALYSIS.read_text()
    after = text[text.index(MARKER) :]
    return re.search(r"```python\n(.*?)```", after, re.S).group(1)


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


@pytest.fixture(scope="module")
def example(demo, tmp_path_factory) -> dict:
    url, _ = demo
    code = analysis_example()
    assert "http://127.0.0.1:8000" in code and PLOT in code
    matplotlib.use("Agg")
    folder = tmp_path_factory.mktemp("example")
    (folder / "docs").mkdir()
    namespace: dict = {"__name__": "analysis_example"}
    printed = io.StringIO()
    with contextlib.chdir(folder), contextlib.redirect_stdout(printed):
        exec(compile(code.replace("http://127.0.0.1:8000", url), str(ANALYSIS), "exec"), namespace)
    import matplotlib.pyplot as plt

    plt.close("all")
    namespace["printed"] = printed.getvalue()
    namespace["plot"] = (folder / PLOT).read_bytes()
    return namespace


def test_the_analysis_example_answers_what_the_text_under_it_says(example) -> None:
    ratio, run_ratio, verdict = example["ratio"], example["run_ratio"], example["verdict"]
    assert example["versions"] == ["2.19.0", "2.20.2"]  # TE 2.18.0's run has no te.Linear
    runs = run_ratio.reset_index().groupby("te_version", observed=True)["run_id"].nunique()
    assert runs.to_dict() == {"2.19.0": 1, "2.20.2": 2}  # "three runs", 2.20.2's "the median of two"
    assert set(example["per_run"].columns) == {"eager", "default"}  # the quick profile's modes
    per_run = lambda recipe: run_ratio.xs(recipe, level="recipe").round(2)  # noqa: E731
    assert set(per_run("nvfp4-ref")) == {1.0}  # "1.00 at 2D and 3D in every run"
    assert set(per_run("nvfp4-ref").index.get_level_values("rank")) == {2, 3}
    failing = example["samples"].query("recipe == 'nvfp4-ref' and rank == 4")
    assert set(failing["verdict"]) == {"error"} and set(failing["mode"]) == {"eager", "default"}
    assert (per_run("bf16").min(), per_run("bf16").max()) == (0.89, 1.12)
    fp8 = run_ratio[run_ratio.index.get_level_values("recipe").str.startswith("fp8")].round(2)
    assert (fp8.min(), fp8.max()) == (0.73, 1.48)
    block = run_ratio.xs(("2.20.2", "fp8-block"), level=("te_version", "recipe")).round(2)
    first, second = sorted(block.index.unique("run_id"))
    assert (block[(first, 2)], block[(second, 2)]) == (1.48, 0.97)
    assert (block[(first, 3)], block[(second, 3)]) == (0.89, 1.38)
    assert example["recipes"] == ["bf16", "fp8-block", "fp8-current", "fp8-delayed", "nvfp4-ref"]
    assert set(verdict[verdict.index.get_level_values("recipe").isin(["nvfp4", "mxfp8"])]) == {"unsupported"}
    assert round(float(ratio[("2.19.0", "fp8-current", 4)]), 2) == 0.73
    assert "fp8-block" in example["printed"] and "1.23" in example["printed"]


def test_the_analysis_example_draws_the_plot_docs_keeps(example) -> None:
    kept = (ROOT / PLOT).read_bytes()
    assert len(kept) < 100_000 and len(example["plot"]) < 100_000
    assert png_size(example["plot"]) == png_size(kept) == (630, 288)


def test_the_cpu_run_says_a_line_each_tenth_of_the_way() -> None:
    from tewatch.campaign.demo import progress_every

    lines: list[str] = []
    progress = progress_every(10, lines.append)
    for percent in (0.5, 3.0, 9.9, 10.0, 12.5, 25.0, 26.0, 99.0, 100.0):
        progress(percent, f"case at {percent}")
    assert lines == [
        "0%: case at 0.5",
        "10%: case at 10.0",
        "25%: case at 25.0",
        "99%: case at 99.0",
        "100%: case at 100.0",
    ]

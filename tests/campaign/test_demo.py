"""`tewatch demo` (the README's main command, here without the CPU suite run, which tests/suites
covers): the bundled real H200 runs land in a fresh store and the dashboard serves them."""

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
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

"""The kept H200 memory and numerics campaign (tests/fixtures/h200-memnum-ab) uploaded again through a real
service: bytes and error values become series with their units, through the path every metric takes, and
the perturbed head keeps every verdict."""

from __future__ import annotations

import pytest

from tests.campaign.replay import FIXTURES, replay_campaign
from tests.conftest import start_server, stop_server
from tewatch.client import Client

KEPT = FIXTURES / "h200-memnum-ab"


@pytest.fixture(scope="module")
def replayed(tmp_path_factory):
    out = tmp_path_factory.mktemp("memnum")
    summary = replay_campaign(KEPT / "base-results", KEPT / "head-results", out)
    server = start_server(f"sqlite:///{out / 'campaign.sqlite3'}", out / "serve.log")
    yield summary, server
    stop_server(server)


def test_the_perturbed_head_keeps_every_verdict_of_the_base(replayed) -> None:
    summary, _ = replayed
    assert (
        summary["verdicts"]["head"]
        == summary["verdicts"]["base"]
        == {"error": 1, "pass": 32, "unsupported": 5}
    )


def test_memory_and_error_metrics_are_series_with_their_units(replayed) -> None:
    _, server = replayed
    with Client(server.url) as tw:
        gemm = tw.series(case="gemm.Gemm", gpu="NVIDIA H200", recipe="bf16")
        units = dict(zip(gemm["benchmark"], gemm["unit"], strict=True))
        assert units["gemm.Gemm.setup_allocated_bytes"] == "bytes"
        assert units["gemm.Gemm.peak_reserved_bytes"] == "bytes"
        assert units["gemm.Gemm.output_vs_fp32_rel_l2"] == "rel error"
        assert units["gemm.Gemm.output_vs_fp32_sqnr_db"] == "dB"
        linear = tw.series(case="linear.LinearFwdBwd", gpu="NVIDIA H200", recipe="fp8-current")
        assert set(linear.loc[linear["benchmark"].str.endswith("leak_bytes_per_step"), "unit"]) == {
            "bytes/step"
        }
        setup = gemm.loc[gemm["benchmark"] == "gemm.Gemm.setup_allocated_bytes", "series_id"]
        values = tw.samples(runs=tw.runs(pr=1))
        head = values.loc[values["series_id"].isin(setup), "value"].tolist()
        base = tw.samples(setup, branch="main")["value"].tolist()
    assert head == [301990912.0] and base == [234882048.0]  # the head's second GEMM workspace: 64 MiB

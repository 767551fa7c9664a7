"""The kept H200 memory and numerics campaign (tests/fixtures/h200-memnum-ab) uploaded again through a real
service: bytes and error values become series with their units, through the path every metric takes, and
the perturbed head keeps every verdict, and its `pr.report` names each perturbation with its size in the
Memory and Numerics sections while the A/A arm's names nothing."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.campaign.replay import FIXTURES, replay_campaign
from tests.conftest import start_server, stop_server
from tewatch.client import Client

pytestmark = pytest.mark.long_setup

KEPT = FIXTURES / "h200-memnum-ab"
SNAPSHOT = KEPT / "pr-report-memory-numerics.md"
MIB = 2**20


@pytest.fixture(scope="module")
def replayed(tmp_path_factory):
    """One replay: the head as pull request 1, the kept A/A arm as pull request 2, both against the base."""
    out = tmp_path_factory.mktemp("memnum")
    aa = KEPT / "aa-results"
    summary = replay_campaign(KEPT / "base-results", KEPT / "head-results", out, "--aa-results", str(aa))
    server = start_server(f"sqlite:///{out / 'campaign.sqlite3'}", out / "serve.log")
    yield summary, server, out
    stop_server(server)


def pr_report(out: Path, pr: int = 1) -> dict:
    delivered = [json.loads(p.read_text()) for p in (out / "webhooks").glob("*-pr.report.json")]
    (report,) = [d["body"]["data"] for d in delivered if d["body"]["data"]["pr_number"] == pr]
    return report


def sections(markdown: str, *titles: str) -> str:
    """The Markdown's sections of these titles, their links' service address and series ids left out."""
    parts = re.split(r"(?m)^(?=### )", markdown)
    kept = [p for p in parts if any(p.startswith(f"### {t}\n") for t in titles)]
    text = re.sub(r"http://127\.0\.0\.1:\d+", "", "".join(kept).split("\n[This PR")[0].rstrip("\n") + "\n")
    return re.sub(r"/series/\d+\?", "/series/ID?", text)


def test_the_perturbed_head_keeps_every_verdict_of_the_base(replayed) -> None:
    summary, _, _ = replayed
    assert (
        summary["verdicts"]["head"]
        == summary["verdicts"]["base"]
        == {"error": 1, "pass": 32, "unsupported": 5}
    )


def test_memory_and_error_metrics_are_series_with_their_units(replayed) -> None:
    _, server, _ = replayed
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


def test_each_memory_perturbation_is_a_row_of_the_report_with_its_size(replayed) -> None:
    report = pr_report(replayed[2])
    rows = {row["benchmark"]: row for row in report["memory"]}
    leaks = {name: row["leak_bytes_per_step"] for name, row in rows.items() if row["leak"]}
    eager = {n for n in leaks if n.startswith("linear.LinearFwdBwd.") and "mode=eager" in n}
    assert len(eager) == 4 and {leaks[n] for n in eager} == {MIB}  # linear-leak-1mib, per te.Linear step
    assert {v for n, v in leaks.items() if n.startswith("offload.")} == {4 * MIB}  # four layers
    assert report["memory_failures"] == len(leaks) == 6
    gemm = [r for n, r in rows.items() if n.startswith("gemm.Gemm.setup_allocated_bytes")]
    assert len(gemm) == 4 and {r["change_bytes"] for r in gemm} == {64 * MIB}  # extra workspace
    assert all(r["verdict"] == "regression" and "+64.0 MiB" in r["description"] for r in gemm)
    cache = rows["quantize.Quantize.setup_allocated_bytes(backend=te, shape=8192x5120, variant=fp8-current)"]
    assert cache["change_bytes"] == 80 * MIB and cache["description"].startswith(
        "setup_allocated_bytes 160.0 MiB -> 240.0 MiB, +80.0 MiB (+50.0 %)"
    )
    assert not any(n.startswith(("rht.", "checks.", "contracts.")) for n in rows)


def test_the_input_shift_drifts_fp8_current_errors_alone_and_every_verdict_passes(replayed) -> None:
    summary, _, out = replayed
    report = pr_report(out)
    assert {r["verdict"] for r in report["numerics"]} == {"drift"}
    assert report["numerics_drift"] == len(report["numerics"]) > 0
    assert all("fp8-current" in r["benchmark"] for r in report["numerics"])
    descriptions = {r["description"] for r in report["numerics"]}
    assert "rel-L2 of output vs fp32 0.0375 -> 0.0427, +13.7 %, tolerance 0.1" in descriptions
    assert "rel-L2 of dequantized vs input 0.0265 -> 0.0284, +7.0 %, tolerance 0.04" in descriptions
    assert "rel-L2 of output vs fp32 0.0376 -> 0.0425, +13.1 %, tolerance 0.08" in descriptions
    assert report["correctness"] == [] and summary["verdicts"]["head"] == summary["verdicts"]["base"]


def test_the_report_markdown_shows_both_sections_as_kept(replayed) -> None:
    markdown = (replayed[2] / "pr-report.md").read_text()
    assert "6 leaking cases · 21 error metrics drifting" in markdown
    assert sections(markdown, "Memory", "Numerics") == SNAPSHOT.read_text()


def test_the_a_a_arm_reports_no_memory_or_numerics_change(replayed) -> None:
    summary, _, out = replayed
    assert summary["aa_perturbations"]["touched"] == 0
    report = pr_report(out, 2)
    assert report["memory"] == [] and report["numerics"] == []
    assert report["memory_failures"] == report["numerics_drift"] == 0
    assert "### Memory" not in (out / "pr-report-2.md").read_text()

"""`tewatch campaign` end to end on CPU: a real service, real asv runs of the torch-ref suites in A/B rounds
of the base and the perturbed head, the head uploaded as a pull request, detection, a signed webhook,
rendered pages. The default three rounds: with two, every comparison was inconclusive."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.long_setup

ROOT = Path(__file__).resolve().parents[2]
PERTURB = "torchref-slow-quantize,torchref-rank3-dequantize"
# quantize's row-wise and 2D-block variants, each on a 2D and a 4D input, and the GEMM: what the
# perturbations break and what they leave alone
BENCH = r"^quantize\.Quantize\.track_seconds\('torch-ref', 'nvfp4-(row|2d)', |^gemm\."


@pytest.fixture(scope="module")
def campaign(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("campaign")
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "tewatch",
            "campaign",
            "--profile",
            "ci",
            "--backends",
            "torch-ref",
            "--bench",
            BENCH,
            "--perturb",
            PERTURB,
            "--pr",
            "7",
            "--out",
            str(out),
            "--base-commit",
            head.stdout.strip(),
            "--project",
            str(ROOT),
        ],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return out


def test_the_perturbed_rank3_dequantize_becomes_correctness_alerts(campaign: Path) -> None:
    summary = json.loads((campaign / "summary.json").read_text())
    assert set(summary["verdicts"]["base"]) == {"pass"}
    assert summary["verdicts"]["head"].get("fail_accuracy", 0) > 0
    correctness = [a for a in summary["alerts"] if a["kind"] == "correctness"]
    assert correctness and all(a["pr_number"] == 7 for a in correctness)
    # only 3D and 4D inputs are broken by the perturbation, never 2D ones
    assert all("2x2x" in a["title"] for a in correctness)


def test_the_extra_quantize_pass_is_a_regression_of_the_pull_request(campaign: Path) -> None:
    summary = json.loads((campaign / "summary.json").read_text())
    assert summary["pr_verdicts"].get("regression", 0) > 0
    report = (campaign / "pr-report.md").read_text()
    assert report.index("### Correctness") < report.index("### Largest regressions")
    assert "PR #7" in report


def test_webhooks_arrive_signed_and_pages_render(campaign: Path) -> None:
    summary = json.loads((campaign / "summary.json").read_text())
    assert summary["signatures_valid"] and summary["webhooks"]["pr.report"] == 1
    assert summary["webhooks"]["correctness.failed"] >= 1
    for name in ("overview", "matrix", "alerts", "runs", "machines", "pull_request"):
        page = (campaign / "pages" / f"{name}.html").read_text()
        assert "<html" in page and "tewatch" in page
    assert "fail" in (campaign / "pages" / "pull_request.html").read_text().lower()

"""`tewatch campaign --base-results --head-results` on kept results: compared again through a real service,
its detection and its webhooks, without running any suite."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"


def replay_campaign(base: Path, head: Path, out: Path, *options: str) -> dict:
    """The campaign's summary.json, the head uploaded as pull request 1 (`options`: more of its own)."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "tewatch",
            "campaign",
            "--base-results",
            str(base),
            "--head-results",
            str(head),
            *options,
            "--pr",
            "1",
            "--out",
            str(out),
            "--project",
            str(ROOT),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert not (out / "base-results").exists() and not (out / "head-results").exists()  # nothing ran
    return json.loads((out / "summary.json").read_text())

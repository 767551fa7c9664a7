"""A campaign reusing a finished run as its base finds that run's commit in asv's layout."""

import json
import shutil
from pathlib import Path

import pytest

from tewatch.campaign.pipeline import single_commit

FIXTURE = Path(__file__).parents[1] / "fixtures" / "h200-full"


def test_the_commit_of_a_results_folder_written_by_tewatch_run(tmp_path: Path) -> None:
    results = tmp_path / "results"
    shutil.copytree(FIXTURE, results)
    # tewatch run leaves the asv config it ran with beside benchmarks.json
    (results / ".tewatch-asv.conf.json").write_text(json.dumps({"version": 1, "results_dir": str(results)}))
    assert single_commit(results) == "f7d8c16d14e12838378ca44617af2072e71c8508"


def test_a_folder_with_two_commits_is_refused(tmp_path: Path) -> None:
    for sha in ("a" * 40, "b" * 40):
        path = tmp_path / "machine" / f"{sha[:8]}-existing-py.json"
        path.parent.mkdir(exist_ok=True)
        path.write_text(json.dumps({"commit_hash": sha}))
    (tmp_path / ".tewatch-asv.conf.json").write_text("{}")
    (tmp_path / "machine" / "machine.json").write_text("{}")
    with pytest.raises(RuntimeError, match="exactly one commit, found 2"):
        single_commit(tmp_path)

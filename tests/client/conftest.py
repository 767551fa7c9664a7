"""A real `tewatch serve` with the bundled H200 history, loaded through the upload API as `tewatch demo`
loads kept runs (H200_HISTORY on main), the campaign's perturbed head as pull request 1 against it, detection
run, and two change points written into the store (one commit holds no history to detect them from)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from sqlalchemy import text

from tests.conftest import FIXTURES, LiveServer, served_sqlite
from tests.uploads import parts_of, post_run
from tewatch.ingest.discover import find_runs
from tewatch.store.engine.database import make_engine, write_connection
from tewatch.store.schema.alert_models import Detection

PR_NUMBER = 1
PR_HEAD = FIXTURES / "h200-campaign" / "head-results"
# TE 2.20.2 on H200s: the full and quick profiles on one GPU, the distributed suite on two
H200_HISTORY = tuple(
    FIXTURES / name
    for name in ("h200-full", "h200-quick", "h200x2-distributed", "h200x2-distributed-compiled")
)


@dataclass
class History:
    server: LiveServer
    main_runs: list[int]
    pr_run: int
    merge_base: str
    change_point_series: int  # the series of the first change point (the second is a ratio: no series)

    @property
    def url(self) -> str:
        return self.server.url


def _wait_for_comparisons(client, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if client.get(f"/api/v1/prs/{PR_NUMBER}/comparisons").json():
            return
        time.sleep(0.3)
    raise AssertionError(f"no comparisons of pull request {PR_NUMBER} within {seconds:.0f} s")


def _add_change_points(db_url: str, run_id: int) -> int:
    engine = make_engine(db_url)
    try:
        with write_connection(engine) as conn:
            series_id, commit_id = conn.execute(
                text(
                    "SELECT s.id, r.commit_id FROM series s JOIN cases c ON c.id = s.case_id "
                    "JOIN benchmarks b ON b.id = s.benchmark_id "
                    "JOIN results x ON x.series_id = s.id JOIN runs r ON r.id = x.run_id "
                    "WHERE b.name = 'linear.LinearFwdBwd.track_seconds' AND c.recipe = 'bf16' AND c.rank = 3 "
                    "AND c.mode = 'default' AND r.id = :run"
                ),
                {"run": run_id},
            ).one()
            common = {
                "branch": "main",
                "gpu_model": "NVIDIA H200",
                "run_id": run_id,
                "commit_id": commit_id,
                "before_commit_id": commit_id,
                "first_possible_commit_id": commit_id,
                "lower_limit": 0.9,
                "upper_limit": 1.1,
                "sigma": 0.02,
                "n_before": 6,
                "n_after": 6,
                "detector_version": "test",
            }
            conn.execute(
                Detection.__table__.insert(),
                [
                    dict(
                        common,
                        series_id=series_id,
                        series_key=f"series:{series_id}",
                        direction="regression",
                        baseline=1.0e-3,
                        level_after=1.2e-3,
                        effect=0.2,
                        z=7.5,
                        environment_shift=False,
                        environment_changes={},
                        config={},
                        active=True,
                    ),
                    dict(
                        common,
                        series_id=None,
                        series_key="ratio:compiled/eager:bf16:3",
                        direction="improvement",
                        baseline=1.0,
                        level_after=0.8,
                        effect=-0.2,
                        z=-6.0,
                        environment_shift=True,
                        environment_changes={"torch": ["2.10.0", "2.11.0"]},
                        config={},
                        active=False,
                    ),
                ],
            )
        return series_id
    finally:
        engine.dispose()


@pytest.fixture(scope="package")
def history(tmp_path_factory) -> Iterator[History]:
    with served_sqlite(tmp_path_factory.mktemp("client")) as (server, db_url), server.client() as client:
        main_runs = []
        for folder in H200_HISTORY:
            for run in find_runs(folder):
                answer = post_run(client, parts_of(run), branch="main")
                assert answer.status_code == 201, answer.text
                main_runs.append(answer.json()["run_id"])
        merge_base = client.get(f"/api/v1/runs/{main_runs[0]}").json()["commit_sha"]
        [head] = find_runs(PR_HEAD)
        answer = post_run(
            client,
            parts_of(head),
            branch=f"pr-{PR_NUMBER}",
            pr_number=str(PR_NUMBER),
            merge_base_sha=merge_base,
        )
        assert answer.status_code == 201, answer.text
        _wait_for_comparisons(client)
        assert client.post("/api/v1/detect", json={"branch": "main"}).status_code == 200
        series_id = _add_change_points(db_url, main_runs[1])
        yield History(server, main_runs, answer.json()["run_id"], merge_base, series_id)

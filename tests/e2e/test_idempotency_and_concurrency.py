"""The same upload twice stores one run; several processes uploading at once lose nothing."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from tests.served import run_cli
from tests.uploads import TINY, parts_of, post_run, tiny_run


def test_same_upload_twice_stores_one_run(live_server):
    parts = parts_of(tiny_run(0))
    with live_server.client() as client:
        first = post_run(client, parts, branch="idem")
        after_first = live_server.counts()
        second = post_run(client, parts, branch="idem")
    assert (first.status_code, second.status_code) == (201, 200)
    assert first.json()["run_id"] == second.json()["run_id"]
    assert second.json()["created"] is False
    assert live_server.counts() == after_first


def test_other_metadata_is_another_run_but_shares_raw_files(live_server):
    parts = parts_of(tiny_run(0))
    with live_server.client() as client:
        post_run(client, parts, branch="share-a")
        before = live_server.counts()
        answer = post_run(client, parts, branch="share-b")
    after = live_server.counts()
    assert answer.status_code == 201
    assert after["runs"] == before["runs"] + 1
    assert after["raw_files"] == before["raw_files"]  # content-addressed: stored once
    assert after["run_files"] > before["run_files"]


def test_concurrent_uploads_from_several_processes_lose_nothing(live_server):
    branches = [f"conc-{i}" for i in range(4)]
    jobs = branches + branches[:2]  # two branches uploaded twice at the same time
    before = live_server.counts()
    upload = ["upload", str(TINY), "--url", live_server.url, "--token", live_server.token, "--branch"]
    # a process per upload, all started at once (forked: tests/served.py's run_cli)
    with ThreadPoolExecutor(len(jobs)) as pool:
        outputs = list(pool.map(lambda branch: run_cli([*upload, branch], timeout=180), jobs))
    for done in outputs:
        code, out, err = done.returncode, done.stdout, done.stderr
        assert code == 0, err
        assert out.count("\nrun ") + out.startswith("run ") == 2, out
    after = live_server.counts()
    runs_per_upload = 2
    assert after["runs"] - before["runs"] == len(branches) * runs_per_upload
    assert after["results"] - before["results"] == len(branches) * runs_per_upload * 14
    assert after["verdicts"] - before["verdicts"] == len(branches) * runs_per_upload * 8
    with live_server.client() as client:
        for branch in branches:
            assert client.get("/api/v1/runs", params={"branch": branch}).json()["total"] == runs_per_upload

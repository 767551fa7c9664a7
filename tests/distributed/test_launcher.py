"""The launcher on CPU with gloo at world size 2: rendezvous, environment, deadline, failing ranks."""

from __future__ import annotations

import os
import time

import pytest

from benchmarks.harness.distributed.environment import NO_MULTICAST
from benchmarks.harness.distributed.launcher import launch
from tests.distributed import rank_functions

pytestmark = pytest.mark.long_running


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as fh:  # a zombie is dead too
        return fh.read().split(")")[-1].split()[0] != "Z"


def test_two_ranks_meet_on_gloo_with_multicast_off_even_when_the_caller_turned_it_on(monkeypatch):
    monkeypatch.setenv("NCCL_NVLS_ENABLE", "1")
    monkeypatch.delenv("NVSHMEM_DISABLE_NVLS", raising=False)
    outcome = launch(rank_functions.sum_ranks, {"shape": [2, 3]}, world_size=2, device="cpu", deadline_s=60)
    assert outcome.status == "ok", outcome.message
    reports = sorted(outcome.reports, key=lambda r: r["rank"])
    assert [r["rank"] for r in reports] == [0, 1]
    assert all(r["sum"] == 3.0 and r["world"] == 2 and r["backend"] == "gloo" for r in reports)
    assert all(r["env"] == NO_MULTICAST for r in reports)
    assert all(r["payload"] == {"shape": [2, 3]} for r in reports)


def test_two_launches_at_once_get_their_own_rendezvous():
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(2) as pool:
        outcomes = list(
            pool.map(
                lambda n: launch(rank_functions.sum_ranks, n, world_size=2, device="cpu", deadline_s=60),
                [1, 2],
            )
        )
    assert [o.status for o in outcomes] == ["ok", "ok"]
    assert [{r["payload"] for r in o.reports} for o in outcomes] == [{1}, {2}]


def test_a_hung_collective_is_a_timeout_and_every_process_of_the_ranks_is_gone(tmp_path):
    pid_file = tmp_path / "child.pid"
    started = time.monotonic()
    outcome = launch(
        rank_functions.last_rank_hangs,
        str(pid_file),
        world_size=2,
        device="cpu",
        deadline_s=30,  # two ranks start, import torch and join a process group well within it, loaded or not
        collective_timeout_s=300,
    )
    assert outcome.status == "timeout"
    assert time.monotonic() - started < 90
    assert [r.status for r in outcome.ranks] == ["killed", "killed"]
    assert "still running after the 30 s deadline" in outcome.message
    child = int(pid_file.read_text())
    deadline = time.monotonic() + 30  # a cap: the loop ends as soon as the child is gone
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(child), "the hung rank's own child process outlived it"


def test_a_rank_that_raises_names_the_rank_the_exception_and_its_phase():
    outcome = launch(
        rank_functions.last_rank_raises, None, world_size=2, device="cpu", deadline_s=60, grace_s=2
    )
    assert outcome.status == "error"
    assert outcome.failed_rank == 1
    failure = outcome.failure()
    assert failure is not None and failure.error is not None
    assert failure.error["exception_class"] == "ValueError"
    assert failure.error["phase"] == "sharded"
    assert "wrong shape" in failure.error["message"] and "last_rank_raises" in failure.error["traceback_head"]
    assert outcome.message == "rank 1: ValueError: shard 1 has the wrong shape"
    # rank 0 was waiting in its all-reduce: gloo fails it when rank 1 exits, else the grace ends it
    assert outcome.ranks[0].status in ("error", "killed")


def test_a_rank_that_dies_without_a_word_is_an_error_with_its_exit_status():
    outcome = launch(
        rank_functions.last_rank_dies, None, world_size=2, device="cpu", deadline_s=60, grace_s=2
    )
    assert outcome.status == "error"
    assert outcome.ranks[1].status == "crashed" and outcome.ranks[1].exitcode == 3
    assert outcome.message == "rank 1 exited with status 3 without a report"


def test_more_ranks_than_gpus_is_refused_before_anything_starts():
    import torch

    if torch.cuda.device_count() >= 64:
        pytest.skip("this machine has 64 GPUs")
    with pytest.raises(ValueError, match="64 ranks need 64 GPUs"):
        launch(rank_functions.sum_ranks, None, world_size=64, device="cuda", deadline_s=5)


def test_a_rank_that_cannot_be_started_raises_its_own_error_and_leaves_no_rank_behind():
    unpicklable = lambda rank, world_size, payload: None  # noqa: E731 (spawn cannot send a lambda)
    with pytest.raises(Exception) as raised:
        launch(unpicklable, None, 2, "cpu", deadline_s=30)
    assert not isinstance(raised.value, (TypeError, AssertionError)), raised.value
    assert "pickle" in f"{type(raised.value).__name__} {raised.value}".lower()

"""Commit order from the git graph (`tewatch commits`): a real git repository whose results files carry
dates out of order, uploaded to a real service, ordered by dates until the graph arrives, then by it."""

from __future__ import annotations

import json
import os
import subprocess

from sqlalchemy.orm import Session

from tests.conftest import served_sqlite
from tests.history.django_data import django_results
from tests.served import run_cli
from tewatch.pipeline.history import branch_histories
from tewatch.store.engine.database import make_engine
from tewatch.store.reads import queries

DAY = 86_400
BENCHMARK = "form_benchmarks.form_clean.benchmark.FormClean.time_form_clean"
FAILING = "query_benchmarks.query_all.benchmark.QueryAll.time_query_all"


def git(repository, *args: str, when: int | None = None) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.org",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.org",
    }
    if when is not None:
        env["GIT_AUTHOR_DATE"] = env["GIT_COMMITTER_DATE"] = f"@{when} +0000"
    return subprocess.run(
        ["git", "-C", str(repository), *args], capture_output=True, text=True, check=True, env=env
    ).stdout.strip()


def build_repository(path) -> list[str]:
    """main: c0 - c1 - c2 - c3 ------- merge - c6 - c7, side: c3 - s4 - s5 - merge; committed a day apart."""
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    start = 1_780_000_000
    shas = []

    def commit(i: int) -> str:
        (path / "f").write_text(str(i))
        git(path, "add", "f")
        git(path, "commit", "-q", "-m", f"c{i}", when=start + i * DAY)
        return git(path, "rev-parse", "HEAD")

    shas += [commit(i) for i in range(4)]
    git(path, "checkout", "-q", "-b", "side")
    shas += [commit(4), commit(5)]
    git(path, "checkout", "-q", "main")
    git(path, "merge", "-q", "--no-ff", "-m", "merge", "side", when=start + 6 * DAY)
    shas.append(git(path, "rev-parse", "HEAD"))
    shas += [commit(7), commit(8)]
    return shas


def write_results(results, shas: list[str], dates: list[int]) -> None:
    """One django results file per commit, dated `dates` (asv's author dates, here out of order); the
    newest commit's FAILING benchmark failed."""
    machine = results / "ubuntu-latest"
    [template] = [p for p in machine.glob("*.json") if p.name != "machine.json"]
    data = json.loads(template.read_text())
    template.unlink()
    for i, (sha, date) in enumerate(zip(shas, dates, strict=True)):
        one = {
            **data,
            "commit_hash": sha,
            "date": date * 1000,
            "env_name": "conda-py3.12",
            "results": dict(data["results"]),
        }
        if i == len(shas) - 1:
            one["results"][FAILING] = [None, *data["results"][FAILING][1:]]
        (machine / f"{sha[:8]}-conda-py3.12.json").write_text(json.dumps(one))


def order(db_url: str) -> list[str]:
    engine = make_engine(db_url)
    with Session(engine) as session:
        [history] = [
            h for h in branch_histories(session, "main", with_ratios=False) if h.info.benchmark == BENCHMARK
        ]
    engine.dispose()
    return [p.sha for p in history.points]


def test_the_git_graph_orders_commits_whose_dates_do_not(tmp_path):
    shas = build_repository(tmp_path / "repo")
    results = django_results(tmp_path / "data", files=1)
    dates = [1_780_000_000 + d * DAY for d in (0, 1, 2, 3, 9, 10, 4, 5, 6)]  # side commits authored late
    dates[-1] = 1_700_000_000  # the newest commit carries the oldest date
    write_results(results, shas, dates)
    with served_sqlite(tmp_path) as (server, db_url):
        upload = [
            "upload",
            str(results),
            "--url",
            server.url,
            "--token",
            server.token,
            "--branch",
            "main",
        ]
        assert run_cli(upload, timeout=300).returncode == 0
        by_date = order(db_url)
        assert by_date[0] == shas[-1] and by_date != shas
        done = run_cli(
            ["commits", str(tmp_path / "repo"), "--url", server.url, "--token", server.token], timeout=300
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == "sent 9 commits; 9 stored commits now follow the graph"
        by_graph = order(db_url)
        engine = make_engine(db_url)
        with engine.connect() as conn:
            latest = {r["case_name"]: (r["status"], r["commit_sha"]) for r in queries.latest_verdicts(conn)}
        engine.dispose()
    parents = {
        line.split()[0]: line.split()[1:]
        for line in git(tmp_path / "repo", "log", "--format=%H %P", "main").splitlines()
    }
    place = {sha: i for i, sha in enumerate(by_graph)}
    assert sorted(by_graph) == sorted(shas)
    assert all(place[p] < place[c] for c, ps in parents.items() for p in ps)
    assert by_graph[-1] == shas[-1]
    assert latest[FAILING.rpartition(".")[0]] == ("error", shas[-1])


def test_a_graph_that_lists_a_commit_twice_or_a_child_first_is_refused_and_stores_nothing(tmp_path) -> None:
    from tests.conftest import served_sqlite

    with served_sqlite(tmp_path) as (server, _), server.client() as client:
        twice = client.post("/api/v1/commits/graph", json={"commits": [["abcd", 1, []], ["abcd", 1, []]]})
        assert twice.status_code == 422 and "listed twice" in twice.text
        child_first = client.post(
            "/api/v1/commits/graph", json={"commits": [["beef", 2, ["abcd"]], ["abcd", 1, []]]}
        )
        assert child_first.status_code == 422 and "parents first" in child_first.text
        assert (
            client.post("/api/v1/commits/graph", json={"commits": [["abcd", 1, []]]}).json()["commits"] == 1
        )

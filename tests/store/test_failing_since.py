"""Where a case's failure began: the oldest failing verdict after its last pass, in commit order (not upload
order), on one branch, outside pull requests, and as seen from an older run."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy.orm import Session

from tewatch.store.engine.database import make_engine
from tewatch.store.engine.migrate import upgrade
from tewatch.store.reads.release_reads import failing_since
from tewatch.store.schema.models import Case, Commit, Environment, Machine, Run, Verdict, VerdictStatus

P, F, E, T = VerdictStatus.passed, VerdictStatus.fail_accuracy, VerdictStatus.error, VerdictStatus.timeout
START = datetime(2026, 10, 1, tzinfo=UTC)
# commit place -> (TE version, the verdicts of the cases flipping, always failing, passing again)
HISTORY = {
    0: ("2.17.0", (P, F, F)),
    1: ("2.18.0", (F, F, F)),
    2: ("2.18.0", (F, F, F)),
    3: ("2.19.0", (P, F, F)),
    4: ("2.20.0", (E, F, F)),
    5: ("2.20.0", (T, F, F)),
    6: ("2.21.0", (F, E, P)),
}
UPLOAD_ORDER = [6, 2, 0, 5, 3, 1, 4]  # run ids do not follow commit order


@pytest.fixture
def store(db_url):
    upgrade(db_url)
    engine = make_engine(db_url)
    with Session(engine) as session:
        machine = Machine(digest="m", name="h200", gpu_model="NVIDIA H200")
        cases = [
            Case(fingerprint=f"c{i}", case_name=f"numerics.Case{i}", gpu_model="NVIDIA H200")
            for i in range(3)
        ]
        environments = {
            v: Environment(digest=v, te_version=v)
            for v in sorted({version for version, _ in HISTORY.values()})
        }
        session.add_all([machine, *cases, *environments.values()])
        runs: dict[int, Run] = {}
        for place in UPLOAD_ORDER:
            version, statuses = HISTORY[place]
            runs[place] = add_run(
                session, machine, environments[version], f"sha{place}", START + timedelta(days=place)
            )
            session.add_all(
                Verdict(run_id=runs[place].id, case_id=c.id, status=s)
                for c, s in zip(cases, statuses, strict=True)
            )
        # a pull request's newest run fails the case that passes again on main; main's history does not hold it
        pr_run = add_run(
            session, machine, environments["2.21.0"], "pr-sha", START + timedelta(days=9), pr_number=7
        )
        session.add(Verdict(run_id=pr_run.id, case_id=cases[2].id, status=F))
        session.commit()
        yield engine, [c.id for c in cases], {place: run.id for place, run in runs.items()}, pr_run.id
    engine.dispose()


def add_run(
    session: Session, machine, environment, sha: str, at: datetime, pr_number: int | None = None
) -> Run:
    branch = "feature" if pr_number else "main"
    commit = Commit(sha=sha, branch=branch, committed_at=at, pr_number=pr_number)
    run = Run(
        digest=sha,
        machine=machine,
        environment=environment,
        commit=commit,
        branch=branch,
        pr_number=pr_number,
    )
    session.add(run)
    session.flush()
    return run


def test_a_failure_began_after_the_last_pass_and_runs_of_other_kinds_of_failure_count_alike(store):
    engine, (flipping, always, passing_again), runs, _ = store
    with engine.connect() as conn:
        since = failing_since(conn, [flipping, always, passing_again])
        also_on_main = failing_since(conn, [flipping, always, passing_again], "main")
    assert since == also_on_main
    assert since[flipping].run_id == runs[4] and since[flipping].te_version == "2.20.0"
    assert since[always].run_id == runs[0] and since[always].te_version == "2.17.0"
    assert passing_again not in since


def test_seen_from_an_older_run_the_failure_began_where_that_runs_streak_began(store):
    engine, (flipping, always, passing_again), runs, pr_run = store
    with engine.connect() as conn:
        assert failing_since(conn, [flipping, always], "main", at_run=runs[2])[flipping].run_id == runs[1]
        assert failing_since(conn, [always], "main", at_run=runs[2])[always].sha == "sha0"
        assert flipping not in failing_since(conn, [flipping], "main", at_run=runs[3])  # it passed there
        assert failing_since(conn, [passing_again], "main", at_run=runs[5])[passing_again].run_id == runs[0]
        # the pull request's run is not on main; seen from it, main's failures are not its own
        assert failing_since(conn, [always], "main", at_run=pr_run) == {}
        assert failing_since(conn, [passing_again], "feature", at_run=pr_run)[passing_again].sha == "pr-sha"
        assert failing_since(conn, [], "main") == {}

"""Which verdict is a case's latest, for the API and the pages alike: on a branch, its newest there; with no
branch chosen, its newest outside pull requests (the default history). Read from the latest-verdict tables
ingest keeps; only the cases whose newest verdict is a pull request's walk their own history."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Connection, select

from tewatch.store.commit_order import newest_commit_first
from tewatch.store.key_lists import in_key_list
from tewatch.store.models import Case, Commit, LatestBranchVerdict, LatestVerdict, Run, Verdict


def latest_verdict_ids(conn: Connection, branch: str | None = None) -> dict[int, int]:
    """Case id -> the id of its latest verdict."""
    if branch:
        return dict(
            conn.execute(
                select(LatestBranchVerdict.case_id, LatestBranchVerdict.verdict_id).where(
                    LatestBranchVerdict.branch == branch
                )
            ).all()
        )
    latest: dict[int, int] = {}
    from_pull_requests = []
    for case_id, verdict_id, pr_number in conn.execute(
        select(LatestVerdict.case_id, LatestVerdict.verdict_id, Run.pr_number).join(
            Run, Run.id == LatestVerdict.run_id
        )
    ):
        if pr_number is None:
            latest[case_id] = verdict_id
        else:
            from_pull_requests.append(case_id)
    latest.update(newest_outside_pull_requests(conn, from_pull_requests))
    return latest


def newest_outside_pull_requests(conn: Connection, case_ids: Sequence[int]) -> dict[int, int]:
    """Case id -> the id of its newest verdict from a run that is not a pull request's (cases with none
    are left out)."""
    if not case_ids:
        return {}
    newest = (
        select(Verdict.id)
        .join(Run, Run.id == Verdict.run_id)
        .join(Commit, Commit.id == Run.commit_id)
        .where(Verdict.case_id == Case.id, Run.pr_number.is_(None))
        .order_by(*newest_commit_first(Verdict.run_id))
        .limit(1)
        .correlate(Case)
        .scalar_subquery()
    )
    rows = conn.execute(select(Case.id, newest).where(in_key_list(conn, Case.id, list(case_ids), "case_ids")))
    return {case_id: verdict_id for case_id, verdict_id in rows if verdict_id is not None}

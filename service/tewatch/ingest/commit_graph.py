"""Commit order from the git graph a runner sends (`tewatch commits`): each commit's place is a time no
earlier than its committer date and a microsecond after the latest of its parents', so a child never
sorts before its parent whatever its dates say, and commits the graph lacks still sort by their dates."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Connection, exists, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from tewatch.ingest.errors import IngestError
from tewatch.ingest.latest import rebuild_latest_verdicts
from tewatch.store.models import Commit, CommitGraph

TICK = timedelta(microseconds=1)
CHUNK = 500


def graph_order(
    commits: Sequence[tuple[str, int, list[str]]], known: dict[str, datetime]
) -> dict[str, datetime]:
    """sha -> place for commits given parents first (`git log --topo-order --reverse`: sha, committer
    time in epoch seconds, parents); `known` holds the places of parents sent before."""
    index = {sha: i for i, (sha, _, _) in enumerate(commits)}
    places: dict[str, datetime] = {}
    for i, (sha, committed, parents) in enumerate(commits):
        place = datetime.fromtimestamp(committed, tz=UTC)
        for parent in parents:
            if index.get(parent, -1) > i:
                raise IngestError(
                    f"commit {sha} comes before its parent {parent}: send parents first", field="commits"
                )
            before = places.get(parent) or known.get(parent)
            if before is not None:
                place = max(place, before + TICK)
        places[sha] = place
    return places


def store_graph(conn: Connection, repo: str, commits: Sequence[tuple[str, int, list[str]]]) -> int:
    """Store the graph, place the repository's stored commits in it and rebuild the latest verdicts;
    returns how many stored commits it placed."""
    parents = {p for _, _, ps in commits for p in ps} - {sha for sha, _, _ in commits}
    known: dict[str, Any] = {}
    ordered = sorted(parents)
    for start in range(0, len(ordered), CHUNK):
        known.update(
            conn.execute(
                select(CommitGraph.sha, CommitGraph.ordered_at).where(
                    CommitGraph.repo == repo, CommitGraph.sha.in_(ordered[start : start + CHUNK])
                )
            ).all()
        )
    places = graph_order(commits, {sha: _aware(at) for sha, at in known.items()})
    insert = pg_insert if conn.dialect.name == "postgresql" else sqlite_insert
    rows = [{"repo": repo, "sha": sha, "parents": ps, "ordered_at": places[sha]} for sha, _, ps in commits]
    for start in range(0, len(rows), CHUNK):
        statement = insert(CommitGraph).values(rows[start : start + CHUNK])
        statement = statement.on_conflict_do_update(
            index_elements=["repo", "sha"],
            set_={"parents": statement.excluded.parents, "ordered_at": statement.excluded.ordered_at},
        )
        conn.execute(statement)
    placed = conn.execute(
        update(Commit)
        .where(
            Commit.repo == repo,
            exists().where(CommitGraph.repo == Commit.repo, CommitGraph.sha == Commit.sha),
        )
        .values(
            ordered_at=select(CommitGraph.ordered_at)
            .where(CommitGraph.repo == Commit.repo, CommitGraph.sha == Commit.sha)
            .scalar_subquery()
        )
    ).rowcount
    rebuild_latest_verdicts(conn)
    return placed


def place_commit(conn: Connection, commit_id: int) -> None:
    """A commit stored after its repository's graph arrived takes its place from it."""
    conn.execute(
        update(Commit)
        .where(Commit.id == commit_id, Commit.ordered_at.is_(None))
        .values(
            ordered_at=select(CommitGraph.ordered_at)
            .where(CommitGraph.repo == Commit.repo, CommitGraph.sha == Commit.sha)
            .scalar_subquery()
        )
    )


def _aware(at: datetime) -> datetime:
    return at if at.tzinfo else at.replace(tzinfo=UTC)

"""Commit order from the git graph a runner sends (`tewatch commits`): each commit's place is a time no
earlier than its committer date and a microsecond after the latest of its parents', so a child never
sorts before its parent whatever its dates say, and commits the graph lacks still sort by their dates.

A graph is refused (422, nothing stored) where it contradicts what is stored: a commit sent again with
other parents (git's never change), or a commit that closes a cycle with commits sent before (a stored
commit naming it as a parent is among its ancestors). A commit already stored from an upload keeps the
date the upload gave it: the graph moves it only after its parents, never by a date of its own."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, delete, exists, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from tewatch.core.clock import as_utc, from_epoch_seconds
from tewatch.ingest.errors import IngestError
from tewatch.ingest.latest import rebuild_latest_verdicts
from tewatch.store.reads.key_lists import in_key_list
from tewatch.store.schema.models import Commit, CommitGraph, CommitGraphMissingParent

TICK = timedelta(microseconds=1)
CHUNK = 500


GraphCommits = Sequence[tuple[str, int, list[str]]]


def graph_order(
    commits: GraphCommits, known: dict[str, datetime], dates: dict[str, datetime] | None = None
) -> dict[str, datetime]:
    """sha -> place for commits given parents first (`git log --topo-order --reverse`: sha, committer
    time in epoch seconds, parents); `known` holds the places of parents sent before, `dates` the dates
    stored commits already have, which stand instead of the graph's."""
    index = {sha: i for i, (sha, _, _) in enumerate(commits)}
    places: dict[str, datetime] = {}
    dates = dates or {}
    for i, (sha, committed, parents) in enumerate(commits):
        place = dates.get(sha) or from_epoch_seconds(committed)
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


def store_graph(conn: Connection, repo: str, commits: GraphCommits) -> int:
    """Store the graph, place the repository's stored commits in it and rebuild the latest verdicts;
    returns how many stored commits it placed."""
    sent = {sha for sha, _, _ in commits}
    stored = _stored_parents(conn, repo, sorted(sent))
    for sha, _, parents in commits:
        if sha in stored and stored[sha] != parents:
            raise IngestError(
                f"commit {sha} is stored with parents {stored[sha]}, this graph gives {parents}: "
                "a commit's parents never change",
                field="commits",
            )
    fresh = sorted(sent - stored.keys())
    _refuse_cycles(conn, repo, commits, fresh)
    outside = {p for _, _, ps in commits for p in ps} - sent
    known: dict[str, Any] = {}
    ordered = sorted(outside)
    for start in range(0, len(ordered), CHUNK):
        known.update(
            conn.execute(
                select(CommitGraph.sha, CommitGraph.ordered_at).where(
                    CommitGraph.repo == repo, CommitGraph.sha.in_(ordered[start : start + CHUNK])
                )
            ).all()
        )
    places = graph_order(
        commits, {sha: as_utc(at) for sha, at in known.items()}, _commit_dates(conn, repo, sorted(sent))
    )
    _note_missing_parents(conn, repo, commits, outside - known.keys(), fresh)
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


def _stored_parents(conn: Connection, repo: str, shas: Sequence[str]) -> dict[str, list[str]]:
    """sha -> parents of those of `shas` the repository's graph holds."""
    found: dict[str, list[str]] = {}
    for start in range(0, len(shas), CHUNK):
        chunk = shas[start : start + CHUNK]
        found.update(
            conn.execute(
                select(CommitGraph.sha, CommitGraph.parents).where(
                    CommitGraph.repo == repo, in_key_list(conn, CommitGraph.sha, chunk, "shas")
                )
            ).all()
        )
    return found


def _commit_dates(conn: Connection, repo: str, shas: Sequence[str]) -> dict[str, datetime]:
    """sha -> committer date of those of `shas` stored from uploads with one."""
    found: dict[str, datetime] = {}
    for start in range(0, len(shas), CHUNK):
        chunk = shas[start : start + CHUNK]
        rows = conn.execute(
            select(Commit.sha, Commit.committed_at).where(
                Commit.repo == repo,
                Commit.committed_at.is_not(None),
                in_key_list(conn, Commit.sha, chunk, "shas"),
            )
        )
        found.update((sha, as_utc(at)) for sha, at in rows if at is not None)
    return found


def _refuse_cycles(conn: Connection, repo: str, commits: GraphCommits, fresh: Sequence[str]) -> None:
    """Refuse the graph where one of its `fresh` commits (not stored before) closes a cycle: only a
    stored commit that named it as a missing parent can lead back to it, so the walk up its ancestors
    happens only then."""
    awaited: list[str] = []
    for start in range(0, len(fresh), CHUNK):
        chunk = fresh[start : start + CHUNK]
        awaited += conn.scalars(
            select(CommitGraphMissingParent.parent)
            .where(
                CommitGraphMissingParent.repo == repo,
                in_key_list(conn, CommitGraphMissingParent.parent, chunk, "shas"),
            )
            .distinct()
        )
    if not awaited:
        return
    sent = {sha: parents for sha, _, parents in commits}
    parents_of: dict[str, list[str]] = {}
    frontier = sorted(set(awaited))
    while frontier:
        stored = _stored_parents(conn, repo, [sha for sha in frontier if sha not in sent])
        following: set[str] = set()
        for sha in frontier:
            parents_of[sha] = sent[sha] if sha in sent else stored.get(sha, [])
            following.update(p for p in parents_of[sha] if p not in parents_of)
        frontier = sorted(following)
    cycle = find_cycle(parents_of)
    if cycle:
        shown = " -> ".join(cycle[:8]) + (" -> ..." if len(cycle) > 8 else "")
        raise IngestError(
            f"this graph closes a cycle with commits stored before ({shown}): a commit cannot be its own "
            "ancestor",
            field="commits",
        )


def find_cycle(parents_of: dict[str, list[str]]) -> list[str]:
    """A cycle of child -> parent edges (its commits, the first repeated at the end), or [] if none."""
    state: dict[str, int] = {}  # 1: on the path being walked, 2: done
    for root in parents_of:
        if root in state:
            continue
        path = [root]
        branches = [iter(parents_of.get(root, []))]
        state[root] = 1
        while branches:
            parent = next(branches[-1], None)
            if parent is None:
                state[path.pop()] = 2
                branches.pop()
            elif state.get(parent) == 1:
                return [*path[path.index(parent) :], parent]
            elif parent not in state:
                state[parent] = 1
                path.append(parent)
                branches.append(iter(parents_of.get(parent, [])))
    return []


def _note_missing_parents(
    conn: Connection, repo: str, commits: GraphCommits, missing: set[str], fresh: Sequence[str]
) -> None:
    """Keep the parents this graph names but neither sends nor holds (a later graph may send them), and
    forget those it now sends."""
    for start in range(0, len(fresh), CHUNK):
        conn.execute(
            delete(CommitGraphMissingParent).where(
                CommitGraphMissingParent.repo == repo,
                in_key_list(conn, CommitGraphMissingParent.parent, fresh[start : start + CHUNK], "shas"),
            )
        )
    rows = [
        {"repo": repo, "parent": parent, "sha": sha}
        for sha, _, parents in commits
        for parent in parents
        if parent in missing
    ]
    insert = pg_insert if conn.dialect.name == "postgresql" else sqlite_insert
    for start in range(0, len(rows), CHUNK):
        conn.execute(
            insert(CommitGraphMissingParent).values(rows[start : start + CHUNK]).on_conflict_do_nothing()
        )


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

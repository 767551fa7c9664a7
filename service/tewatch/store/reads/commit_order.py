"""Commit order as SQL: the commit's place in the git graph a runner sent (`tewatch commits`), else its
date (a commit without either first), then run start (or upload), then run id. Branch histories, the
latest-verdict tables, series points and the pages' "latest" and "last N" all use it."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import ColumnElement, DateTime, SQLColumnExpression, func, literal

from tewatch.store.schema.models import Commit, Run

NO_DATE = datetime(1970, 1, 1, tzinfo=UTC)


def commit_place() -> ColumnElement:
    """A commit's place in commit order, never null (a commit without graph place or date first)."""
    return func.coalesce(Commit.ordered_at, Commit.committed_at, literal(NO_DATE, DateTime(timezone=True)))


def commit_order_columns() -> tuple[ColumnElement, ColumnElement]:
    """(commit place, run start) of a run, never null; with the run id, its place in commit order. The
    query joins Run and Commit."""
    return commit_place(), func.coalesce(Run.started_at, Run.uploaded_at)


def newest_commit_first(run_id: SQLColumnExpression[Any]) -> tuple[ColumnElement, ...]:
    """ORDER BY terms, newest commit first."""
    committed, started = commit_order_columns()
    return committed.desc(), started.desc(), run_id.desc()


def oldest_commit_first(run_id: SQLColumnExpression[Any]) -> tuple[SQLColumnExpression[Any], ...]:
    """ORDER BY terms, oldest commit first."""
    committed, started = commit_order_columns()
    return committed, started, run_id

"""`/releases`: each TE release's step from the one before on every branch and machine, newest first: the
series the comparer called regressions and improvements, with their sizes, and the cases that began
failing or pass again."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Connection

from tewatch.store.reads.release_reads import ReleaseStep, RunRelease, release_steps, run_releases


@dataclass
class ReleasesPage:
    steps: list[ReleaseStep]
    runs: dict[int, RunRelease]  # every base and head run: the commit it is filed under


def releases_page(conn: Connection, branch: str = "") -> ReleasesPage:
    steps = release_steps(conn, branch)
    run_ids = [run_id for step in steps for run_id in step.base_run_ids + step.head_run_ids]
    return ReleasesPage(steps, run_releases(conn, run_ids))

"""What every page's header says about the store: what it tracks, and whether the compile-vs-eager grid
has anything to show. Read once per upload (the newest run id), not once per page."""

from __future__ import annotations

import threading
from dataclasses import dataclass

from fastapi import Request
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session

from tewatch.store.reads.case_reads import case_placements, has_case_of_backend
from tewatch.store.reads.release_reads import step_outlines
from tewatch.store.reads.run_reads import newest_run_id
from tewatch.web.deps import get_engine
from tewatch_dashboards.views.matrix import matrix_column

TE_BACKENDS = ("te", "te-ref", "torch-ref")  # the suites' backends (benchmarks/harness/profiles.py)
TE_SUBJECT = "TE NVFP4 benchmarks"
GENERAL_SUBJECT = "asv benchmarks"

_lock = threading.Lock()


@dataclass(frozen=True)
class SiteFacts:
    subject: str  # beside the brand: the configured project name, else what the store holds
    has_grid: bool  # some case belongs in the compile-vs-eager grid (a torch.compile mode, a TE check)
    has_releases: bool = False  # two TE releases were measured on one branch and machine


def read_facts(session: Session, project_name: str) -> SiteFacts:
    conn = session.connection()
    te = has_case_of_backend(conn, TE_BACKENDS)
    has_grid = any(
        matrix_column(mode, rank, labels) is not None for mode, rank, labels in case_placements(conn)
    )
    return SiteFacts(
        project_name or (TE_SUBJECT if te else GENERAL_SUBJECT), has_grid, bool(step_outlines(conn))
    )


def site_facts(request: Request) -> SiteFacts:
    """The facts of the app's store as of its newest run; the general ones when the store cannot be read
    (an error page must still render)."""
    state = request.app.state
    settings = getattr(state, "settings", None)
    project_name = getattr(settings, "project_name", "")
    try:
        with Session(get_engine(request)) as session:
            newest = newest_run_id(session.connection())
            cached = getattr(state, "site_facts", None)
            if cached is not None and cached[0] == newest:
                return cached[1]
            facts = read_facts(session, project_name)
    except SQLAlchemyError:
        return SiteFacts(project_name or GENERAL_SUBJECT, True, True)
    with _lock:
        state.site_facts = (newest, facts)
    return facts

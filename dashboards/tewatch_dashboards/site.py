"""What every page's header says about the store: what it tracks, and whether the compile-vs-eager grid
has anything to show. Read once per upload (the newest run id), not once per page."""

from __future__ import annotations

import threading
from dataclasses import dataclass

from fastapi import Request
from sqlalchemy import func, select
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session

from tewatch.store.models import Case, Run
from tewatch.web.deps import get_engine
from tewatch_dashboards.queries import matrix_column

TE_BACKENDS = ("te", "te-ref", "torch-ref")  # the suites' backends (benchmarks/harness/profiles.py)
TE_SUBJECT = "TE NVFP4 benchmarks"
GENERAL_SUBJECT = "asv benchmarks"

_lock = threading.Lock()


@dataclass(frozen=True)
class SiteFacts:
    subject: str  # beside the brand: the configured project name, else what the store holds
    has_grid: bool  # some case belongs in the compile-vs-eager grid (a torch.compile mode, a TE check)


def read_facts(session: Session, project_name: str) -> SiteFacts:
    te = session.scalar(select(Case.id).where(Case.backend.in_(TE_BACKENDS)).limit(1)) is not None
    candidates = session.execute(
        select(Case.mode, Case.rank, Case.labels).where(Case.mode.is_not(None) | Case.backend.is_not(None))
    )
    has_grid = any(matrix_column(mode, rank, labels or {}) is not None for mode, rank, labels in candidates)
    return SiteFacts(project_name or (TE_SUBJECT if te else GENERAL_SUBJECT), has_grid)


def site_facts(request: Request) -> SiteFacts:
    """The facts of the app's store as of its newest run; the general ones when the store cannot be read
    (an error page must still render)."""
    state = request.app.state
    settings = getattr(state, "settings", None)
    project_name = getattr(settings, "project_name", "")
    try:
        with Session(get_engine(request)) as session:
            newest = session.scalar(select(func.max(Run.id)))
            cached = getattr(state, "site_facts", None)
            if cached is not None and cached[0] == newest:
                return cached[1]
            facts = read_facts(session, project_name)
    except SQLAlchemyError:
        return SiteFacts(project_name or GENERAL_SUBJECT, True)
    with _lock:
        state.site_facts = (newest, facts)
    return facts

"""The database session a page reads through: one per request, on the app's engine.

Pages obey the service's read policy: when reads need a token, so do the pages.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated

from fastapi import Depends, Request
from sqlalchemy.orm import Session

from tewatch.web.deps import get_engine, read_access


def get_session(request: Request, _: Annotated[None, Depends(read_access)]) -> Iterator[Session]:
    with Session(get_engine(request)) as session:
        yield session

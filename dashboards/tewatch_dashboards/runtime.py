"""What the service process does once at startup so that pages answer in steady time.

A page of thousands of cases allocates enough objects to set off Python's full (generation 2) garbage
collection every few requests, and a full collection walks every object the loaded service holds: some
200,000 (SQLAlchemy, FastAPI, Jinja, the app), 100 ms or more on a busy machine, charged to whichever
request is unlucky. Freezing the heap once startup has built it moves those objects out of the collector's
reach (`gc.freeze`); they are never garbage, and what requests allocate is still collected as usual.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

from tewatch_dashboards.templating import templates


def compile_templates() -> None:
    """Compile every page template now, so its code is built before the heap is frozen."""
    env = templates.env
    for name in env.list_templates(extensions=["html"]):
        env.get_template(name)


@contextmanager
def frozen_heap() -> Iterator[None]:
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()

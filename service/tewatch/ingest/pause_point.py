"""A test-only pause inside an upload's write transaction, so that a test can kill the service there.

Off unless TEWATCH_TEST_PAUSE_UPLOAD names a point of `store_plan` (one of POINTS) and
TEWATCH_TEST_PAUSE_SIGNAL a file: there, with the transaction open and its write lock held, the
upload writes the file (the point, the process id, the run id) and then waits for good, holding the
lock. Nothing in production sets these variables; unset, a pause point costs one dictionary lookup.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

POINT_VARIABLE = "TEWATCH_TEST_PAUSE_UPLOAD"
SIGNAL_VARIABLE = "TEWATCH_TEST_PAUSE_SIGNAL"
POINTS = (
    "after-run",  # the run row is inserted, none of its results
    "after-results",  # results and verdicts are inserted, not the latest-verdict tables nor the files
    "before-commit",  # everything is written; the commit is next
)


def pause_point(point: str, run_id: int) -> None:
    """Signal and wait forever when the environment asks for a pause at `point`; else return at once."""
    if os.environ.get(POINT_VARIABLE) != point:
        return
    signal = Path(os.environ[SIGNAL_VARIABLE])
    partial = signal.with_name(signal.name + ".partial")
    partial.write_text(json.dumps({"point": point, "pid": os.getpid(), "run_id": run_id}))
    partial.rename(signal)  # whoever waits on the file reads it whole
    threading.Event().wait()

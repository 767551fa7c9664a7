"""A mark of the store that changes whenever what the case-wide pages show may have changed."""

from __future__ import annotations

from sqlalchemy import Connection, func, select

from tewatch.store.schema.alert_models import Alert, AlertStatusChange, Detection, ReleaseComparison
from tewatch.store.schema.models import Run


def store_state(conn: Connection) -> tuple:
    """Changes on an upload (cases, series, verdicts and results arrive only with a run), an alert opening
    or changing status (each adds a status change), detection recording or withdrawing a change point,
    a release's comparisons written (rewritten ones are newer).
    Read it before the data it stands for."""
    return tuple(
        conn.execute(
            select(
                select(func.max(Run.id)).scalar_subquery(),
                select(func.max(Alert.id)).scalar_subquery(),
                select(func.max(AlertStatusChange.id)).scalar_subquery(),
                select(func.max(Detection.id)).scalar_subquery(),
                select(func.max(Detection.updated_at)).scalar_subquery(),
                select(func.max(ReleaseComparison.created_at)).scalar_subquery(),
            )
        ).one()
    )

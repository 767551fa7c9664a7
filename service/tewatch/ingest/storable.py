"""The last check before a RunPlan is written: every value of its rows fits the column it goes to.

The parsers already refuse, naming the file and field, what they know the store cannot keep (see
tewatch.store.schema.limits); this check reads the columns' own types, so a value that reaches a column by a
path they do not check is refused too (422, naming the column), never an error inside the transaction.
The results rows, nearly all of an upload, are left out: every value in them is checked while parsing.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import JSON, BigInteger, DateTime, Float, Integer, String, Table

from tewatch.ingest.errors import IngestError
from tewatch.ingest.plan import CasePlan, PlannedVerdict, RunPlan
from tewatch.store.schema.limits import (
    INT32_MAX,
    INT32_MIN,
    INT64_MAX,
    INT64_MIN,
    int_problem,
    json_problem,
    text_problem,
    time_problem,
)
from tewatch.store.schema.models import Benchmark, Case, Commit, Environment, Machine, Run, Verdict

# the file a table's values come from, where it is one file
SOURCE_FILES = {"machines": "machine", "environments": "run", "benchmarks": "benchmarks", "verdicts": "cases"}


def check_plan(plan: RunPlan) -> None:
    """Raises IngestError for the first value its column cannot keep.

    Column by column: one check of all of a column's values at once, and only where that finds something,
    one value at a time to say which."""
    for table, columns, describe in _tables(plan):
        for name, values in columns:
            if name not in table.c:
                continue
            column_type = table.c[name].type
            if _all_fit(column_type, values):
                continue
            for index, value in enumerate(values):
                problem = value_problem(column_type, value)
                if problem:
                    raise IngestError(
                        f"the store cannot keep {table.name}.{name} of {describe(index)}: {problem}",
                        file=SOURCE_FILES.get(table.name),
                        field=name,
                    )


Columns = list[tuple[str, Sequence[Any]]]  # (column name, its value in each row)


def _tables(plan: RunPlan) -> Iterator[tuple[Table, Columns, Callable[[int], str]]]:
    """(table, columns, which row in words) for every table an upload writes but the results."""
    yield Machine.__table__, _columns([plan.machine]), lambda _: "the machine"
    yield Environment.__table__, _columns([plan.environment]), lambda _: "the environment"
    yield Commit.__table__, _columns([plan.commit]), lambda _: "the commit"
    yield Run.__table__, _columns([plan.run]), lambda _: "the run"
    names = list(plan.benchmarks)
    benchmarks = _columns(list(plan.benchmarks.values()))
    yield Benchmark.__table__, benchmarks, lambda i: f"the benchmark {names[i]!r}"
    cases = list(plan.cases.values())
    rows = [case.row() for case in cases]
    # every row has the keys of CasePlan.row, in its order
    values = zip(*(row.values() for row in rows), strict=True)
    case_columns: Columns = list(zip(rows[0], values, strict=True)) if rows else []
    yield Case.__table__, case_columns, lambda i: _case_words("the case", cases[i])
    verdicts = plan.verdicts
    verdict_columns: Columns = (
        list(zip(PlannedVerdict._fields, zip(*verdicts, strict=True), strict=True)) if verdicts else []
    )
    yield (
        Verdict.__table__,
        verdict_columns,
        lambda i: _case_words("the verdict of", plan.cases[verdicts[i].case_fingerprint]),
    )


def _columns(rows: list[dict[str, Any]]) -> Columns:
    """The rows' values column by column, for the keys of the first row."""
    return [(name, [row.get(name) for row in rows]) for name in rows[0]] if rows else []


def _case_words(prefix: str, case: CasePlan) -> str:
    return f"{prefix} {case.case_name!r} {case.params!r}"[:200]


def _all_fit(column_type: Any, values: Sequence[Any]) -> bool:
    """Whether the column can keep every value, checked at once (False: look at each one)."""
    present = [v for v in values if v is not None]
    if not present:
        return True
    if isinstance(column_type, JSON):
        return json_problem(present) is None
    if isinstance(column_type, String):
        texts = [v for v in present if isinstance(v, str)]
        limit = column_type.length
        too_long = limit is not None and max(map(len, texts), default=0) > limit
        return not too_long and text_problem("".join(texts)) is None
    return all(value_problem(column_type, v) is None for v in present)


def value_problem(column_type: Any, value: Any) -> str | None:
    """Why a column of this type cannot keep the value, or None."""
    if isinstance(column_type, JSON):
        problem = json_problem(value)
        return None if problem is None else f"{problem[0] or 'the value'}: {problem[1]}"
    if isinstance(column_type, String) and isinstance(value, str):  # Text and Enum are Strings
        return text_problem(value, column_type.length)
    if isinstance(column_type, Integer) and isinstance(value, int):
        if isinstance(column_type, BigInteger):
            return int_problem(value, INT64_MIN, INT64_MAX)
        return int_problem(value, INT32_MIN, INT32_MAX)
    if isinstance(column_type, Float) and isinstance(value, float) and not math.isfinite(value):
        return f"{value} is not a finite number"
    if isinstance(column_type, DateTime) and isinstance(value, datetime):
        return time_problem(value)
    return None

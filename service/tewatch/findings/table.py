"""How a report's section is laid out, whatever renders it: a title, a lead sentence, columns, and for
each row its cells, typed by what they hold so that the Markdown and the page each format them their way."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

CellKind = Literal["case", "previous", "status", "detail", "value", "change", "interval"]


@dataclass(frozen=True)
class Cell:
    """`case`: a name (linked to `link`, a dashboard path); `previous`: a verdict on the merge base ("" for
    a case it lacks); `status`: a verdict on the head; `detail`: what a verdict failed with; `value`: a
    measurement in `unit`; `change`: a relative effect; `interval`: its 95 % interval, `numbers` (low, high)."""

    kind: CellKind
    text: str = ""
    numbers: tuple[float | None, ...] = ()  # None: not measured
    unit: str = ""
    link: str | None = None


@dataclass(frozen=True)
class Section:
    """A list of rows of the report (`field`), shown under `title`. `changed`: what the pull request
    changed, which the comment lists and the page leads with; else context, on the page and in the payload."""

    field: str
    title: str
    columns: tuple[str, ...]
    html_id: str
    lead: str = ""
    changed: bool = True

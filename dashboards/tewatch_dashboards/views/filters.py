"""The filters the case-wide pages take from their query string."""

from __future__ import annotations

from dataclasses import dataclass

from tewatch.store.reads.case_reads import CaseSelection


@dataclass(frozen=True)
class Filters:
    gpu: str = ""
    recipe: str = ""
    backend: str = ""
    branch: str = ""
    q: str = ""  # searched in what a page shows of each case (CaseRow.matches)
    world_size: int | None = None

    def selection(self, case_id: int | None = None) -> CaseSelection:
        """The cases the filters keep, before the search."""
        return CaseSelection(
            gpu=self.gpu or None,
            recipe=self.recipe or None,
            backend=self.backend or None,
            world_size=self.world_size,
            case_id=case_id,
        )

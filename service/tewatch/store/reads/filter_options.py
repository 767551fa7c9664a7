"""The values the pages' filters offer: GPU models, recipes, backends and world sizes of the cases, the
branches of the runs that are not a pull request's."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, select

from tewatch.store.schema.models import Case, Run


@dataclass(frozen=True)
class FilterOptions:
    gpus: list[str]
    recipes: list[str]
    backends: list[str]
    branches: list[str]
    world_sizes: list[int]


def filter_options(conn: Connection) -> FilterOptions:
    def distinct(column: Any) -> list:
        return [v for v in conn.scalars(select(column).distinct().order_by(column)) if v not in (None, "")]

    return FilterOptions(
        gpus=distinct(Case.gpu_model),
        recipes=distinct(Case.recipe),
        backends=distinct(Case.backend),
        branches=[
            b
            for b in conn.scalars(
                select(Run.branch).where(Run.pr_number.is_(None)).distinct().order_by(Run.branch)
            )
            if b
        ],
        world_sizes=distinct(Case.world_size),
    )

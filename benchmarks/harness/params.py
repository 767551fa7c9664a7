"""asv params helpers: asv runs the product of all param lists; `skip_params` drops the combinations
that are not cases (asv stores them as NaN; they get no record and `tewatch run` ignores them)."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import Any


def invalid_combinations(params: Sequence[Sequence[Any]], is_case: Callable[..., bool]) -> list[tuple]:
    return [combo for combo in itertools.product(*params) if not is_case(*combo)]


def keep(values: Sequence[str], allowed: Sequence[str]) -> list[str]:
    return [v for v in values if v in allowed]
